import { jest } from '@jest/globals';
import { errors, exportJWK, generateKeyPair, type JWK } from 'jose';
import {
  JWKS_MAX_BYTES,
  JWKS_REFRESH_MS,
  JwksKeys,
  JwksUnavailableError,
  cappedFetch,
} from './jwks-keys.js';

const URL_ = 'https://idp.example.com/.well-known/jwks.json';
const COOLDOWN = 1000;

async function publicJwk(kid: string): Promise<JWK> {
  const { publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

/** A provider whose answers the test sets: a key set, a status, or a network failure. */
function provider() {
  let answer: () => Promise<Response> = () => Promise.reject(new Error('no answer set'));
  const fetches: string[] = [];
  const fetchImpl = jest.fn((url: string | URL) => {
    fetches.push(url.toString());
    return answer();
  });
  return {
    fetches,
    fetchImpl: fetchImpl as unknown as typeof fetch,
    serve(...keys: JWK[]) {
      answer = () => Promise.resolve(Response.json({ keys }));
    },
    answerWith(response: () => Promise<Response>) {
      answer = response;
    },
    fail(code = 'ECONNREFUSED') {
      answer = () => Promise.reject(new TypeError('fetch failed', { cause: { code } }));
    },
  };
}

function setUp() {
  const idp = provider();
  let now = 1_000_000;
  const logger = { warn: jest.fn(), log: jest.fn() };
  const keys = new JwksKeys({ url: URL_, cooldownMs: COOLDOWN }, idp.fetchImpl, () => now, logger);
  return {
    idp,
    keys,
    logger,
    advance: (ms: number) => {
      now += ms;
    },
    key: (kid: string) => Promise.resolve(keys.getKey({ alg: 'ES256', kid }, undefined as never)),
  };
}

async function noMatchingKey(run: Promise<unknown>): Promise<void> {
  await expect(run).rejects.toBeInstanceOf(errors.JWKSNoMatchingKey);
}

describe('JwksKeys', () => {
  let a: JWK;
  let b: JWK;

  beforeAll(async () => {
    [a, b] = await Promise.all([publicJwk('a'), publicJwk('b')]);
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('fetches the key set at start, and finds a key by its kid', async () => {
    const { idp, keys, key } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    expect(idp.fetches).toEqual([URL_]);
    await expect(key('a')).resolves.toBeDefined();
  });

  it.each([
    [
      'refuses the connection',
      (idp: ReturnType<typeof provider>) => idp.fail(),
      'fetch failed (ECONNREFUSED)',
    ],
    [
      'answers 404',
      (idp: ReturnType<typeof provider>) =>
        idp.answerWith(() => Promise.resolve(new Response('nope', { status: 404 }))),
      'Expected 200 OK from the JSON Web Key Set HTTP response',
    ],
    [
      'answers what is not JSON',
      (idp: ReturnType<typeof provider>) =>
        idp.answerWith(() => Promise.resolve(new Response('<html>', { status: 200 }))),
      'Failed to parse the JSON Web Key Set HTTP response as JSON',
    ],
    [
      'answers JSON that is not a key set',
      (idp: ReturnType<typeof provider>) =>
        idp.answerWith(() => Promise.resolve(Response.json({ keys: 'none' }))),
      'JSON Web Key Set malformed',
    ],
  ])('fails the start, naming the URL, when the provider %s', async (_what, answer, reason) => {
    const { idp, keys } = setUp();
    answer(idp);
    const error = await keys.onModuleInit().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(JwksUnavailableError);
    expect((error as Error).message).toBe(
      `JWT_JWKS_URL ${URL_} did not answer with a key set: ${reason}`,
    );
  });

  it('fetches again for a key it does not hold, and finds the rotated one', async () => {
    const { idp, keys, key, advance } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    advance(COOLDOWN);
    idp.serve(b);
    await expect(key('b')).resolves.toBeDefined();
    expect(idp.fetches).toHaveLength(2);
    // The key rotated out is gone with the set it was in.
    advance(COOLDOWN);
    await noMatchingKey(key('a'));
    expect(idp.fetches).toHaveLength(3);
  });

  it('fetches at most once per cooldown for keys it does not hold', async () => {
    const { idp, keys, key, advance } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    advance(COOLDOWN - 1);
    for (const kid of ['x', 'y', 'z']) await noMatchingKey(key(kid));
    expect(idp.fetches).toHaveLength(1);
    advance(1);
    await noMatchingKey(key('x'));
    expect(idp.fetches).toHaveLength(2);
    await noMatchingKey(key('y'));
    expect(idp.fetches).toHaveLength(2);
  });

  it('counts the cooldown from a failed fetch too, and keeps the keys it held', async () => {
    const { idp, keys, key, advance, logger } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    advance(COOLDOWN);
    idp.fail();
    await noMatchingKey(key('x'));
    expect(idp.fetches).toHaveLength(2);
    expect(logger.warn).toHaveBeenCalledWith(
      `Could not fetch JWT_JWKS_URL ${URL_} (a token names a key not held): fetch failed (ECONNREFUSED); keeping the keys fetched before`,
    );
    // Within the cooldown of the failed fetch: none more, and the held key still verifies.
    advance(COOLDOWN - 1);
    await noMatchingKey(key('x'));
    expect(idp.fetches).toHaveLength(2);
    await expect(key('a')).resolves.toBeDefined();
  });

  it('warns once while the provider keeps failing, and says when it answers again', async () => {
    const { idp, keys, key, logger } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    idp.fail();
    await keys.refresh('scheduled');
    await keys.refresh('scheduled');
    expect(logger.warn).toHaveBeenCalledTimes(1);
    await expect(key('a')).resolves.toBeDefined();
    idp.serve(a, b);
    await keys.refresh('scheduled');
    expect(logger.log).toHaveBeenCalledWith('JWT_JWKS_URL answers again: keys refreshed');
    await keys.refresh('scheduled');
    expect(logger.log).toHaveBeenCalledTimes(1);
    await expect(key('b')).resolves.toBeDefined();
  });

  it('shares one fetch between tokens that wait for it, inside the cooldown or not', async () => {
    const { idp, keys, key, advance } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    keys.onApplicationShutdown();
    advance(COOLDOWN);
    const answer = deferred<Response>();
    idp.answerWith(() => answer.promise);
    const first = key('b');
    const second = key('b');
    answer.resolve(Response.json({ keys: [a, b] }));
    await expect(Promise.all([first, second])).resolves.toHaveLength(2);
    expect(idp.fetches).toHaveLength(2);
  });

  it('refreshes on its schedule until shut down', async () => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick'] });
    const { idp, keys } = setUp();
    idp.serve(a);
    await keys.onModuleInit();
    jest.advanceTimersByTime(JWKS_REFRESH_MS - 1);
    expect(idp.fetches).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(idp.fetches).toHaveLength(2);
    keys.onApplicationShutdown();
    jest.advanceTimersByTime(JWKS_REFRESH_MS * 3);
    expect(idp.fetches).toHaveLength(2);
  });

  it('never finds a key before the set is fetched', async () => {
    const { keys, key } = setUp();
    await noMatchingKey(key('a'));
    expect(keys).toBeDefined();
  });
});

describe('cappedFetch', () => {
  const chunked = (sizes: number[], status = 200) =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const size of sizes) controller.enqueue(new Uint8Array(size).fill(0x20));
          controller.close();
        },
      }),
      { status, headers: { 'content-type': 'application/json' } },
    );

  it('passes an answer within the cap through, its status and headers kept', async () => {
    const capped = cappedFetch(async () => chunked([400, 600], 404), 1000);
    const response = await capped('https://idp.example.com/jwks');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect((await response.arrayBuffer()).byteLength).toBe(1000);
    const empty = await cappedFetch(async () => new Response(null, { status: 204 }), 10)('x');
    expect(empty.status).toBe(204);
  });

  it('refuses an answer past the cap, reading no more of it', async () => {
    let pulled = 0;
    const endless = new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += 1;
          controller.enqueue(new Uint8Array(64 * 1024));
        },
      }),
    );
    const capped = cappedFetch(async () => endless, JWKS_MAX_BYTES);
    await expect(capped('https://idp.example.com/jwks')).rejects.toThrow(
      `the key set is larger than ${JWKS_MAX_BYTES} bytes`,
    );
    expect(pulled).toBeLessThanOrEqual(JWKS_MAX_BYTES / (64 * 1024) + 2);
  });

  it('fails the start for a key set past the cap', async () => {
    const keys = new JwksKeys({ url: URL_, cooldownMs: COOLDOWN }, async () =>
      Response.json({ keys: [], padding: 'x'.repeat(JWKS_MAX_BYTES) }),
    );
    await expect(keys.onModuleInit()).rejects.toThrow(
      `JWT_JWKS_URL ${URL_} did not answer with a key set: the key set is larger than ${JWKS_MAX_BYTES} bytes`,
    );
  });
});
