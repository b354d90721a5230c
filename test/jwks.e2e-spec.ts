import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { createTestApp, type TestApp } from './support/test-app.js';

// Keys that rotate: JWT_JWKS_URL names an OIDC provider's key set. A local provider rotates its
// key mid-test; Scribe fetches the new set for a token naming a key it does not hold, at most
// once per cooldown, and keeps the keys it holds while the provider is down.
const COOLDOWN_MS = 1000;
const QUERY = '{ sessions(first: 1) { totalCount } }';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256' } };
}

function token(key: SigningKey, claims: Record<string, unknown> = { scope: 'read' }) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid })
    .setIssuer('https://idp.test')
    .setAudience('scribe')
    .setExpirationTime('5m')
    .sign(key.privateKey);
}

/** An OIDC provider's key set on a local port: what it serves, and how often it was asked. */
async function keyServer(): Promise<{
  url: string;
  serve(keys: SigningKey[]): void;
  fetches(): number;
  close(): Promise<void>;
}> {
  let served: JWK[] = [];
  let fetches = 0;
  const server: Server = createServer((request, response) => {
    fetches += 1;
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ keys: served }));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    serve(keys) {
      served = keys.map((key) => key.jwk);
    },
    fetches: () => fetches,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('JWT_JWKS_URL', () => {
  let idp: Awaited<ReturnType<typeof keyServer>>;
  let sut: TestApp;
  let first: SigningKey;
  let second: SigningKey;

  beforeAll(async () => {
    [first, second] = await Promise.all([signingKey('2026-11'), signingKey('2026-12')]);
    idp = await keyServer();
    idp.serve([first]);
    sut = await createTestApp('sqlite', {
      JWT_JWKS_URL: idp.url,
      JWT_JWKS_COOLDOWN_MS: String(COOLDOWN_MS),
      JWT_ISSUER: 'https://idp.test',
      JWT_AUDIENCE: 'scribe',
    });
  });

  afterAll(async () => {
    await sut?.close();
    await idp.close();
  });

  const ask = async (jwt: string) => sut.gql(QUERY, undefined, { authorization: `Bearer ${jwt}` });
  const code = (answer: Awaited<ReturnType<typeof ask>>) =>
    answer.errors?.[0]?.extensions?.code ?? 'ok';

  it('verifies a token with the key the provider serves, fetched once at start', async () => {
    expect(idp.fetches()).toBe(1);
    expect(code(await ask(await token(first)))).toBe('ok');
    expect(idp.fetches()).toBe(1);
  });

  it('refuses a token signed by another key, or for another audience, or with a secret', async () => {
    const stranger = await signingKey('2026-11');
    const refused = await ask(await token(stranger));
    expect(refused.status).toBe(401);
    expect(refused.errors?.[0]?.message).toMatch(/signature verification failed/);
    const elsewhere = await new SignJWT({ scope: 'read' })
      .setProtectedHeader({ alg: 'RS256', kid: first.kid })
      .setIssuer('https://idp.test')
      .setAudience('another')
      .sign(first.privateKey);
    expect(code(await ask(elsewhere))).toBe('UNAUTHENTICATED');
    const hmac = await new SignJWT({ scope: 'admin' })
      .setProtectedHeader({ alg: 'HS256', kid: first.kid })
      .setIssuer('https://idp.test')
      .setAudience('scribe')
      .sign(new TextEncoder().encode('a-secret-of-thirty-two-bytes-ok!'));
    expect(code(await ask(hmac))).toBe('UNAUTHENTICATED');
  });

  it('follows a rotation: the new key is fetched when a token names it, the old one is gone', async () => {
    idp.serve([second]);
    await pause(COOLDOWN_MS);
    const before = idp.fetches();
    expect(code(await ask(await token(second)))).toBe('ok');
    expect(idp.fetches()).toBe(before + 1);
    // Rotated out: not in the set Scribe now holds, and within the cooldown no fetch is made.
    const old = await ask(await token(first));
    expect(old.errors?.[0]?.message).toMatch(/no applicable key found/);
    expect(idp.fetches()).toBe(before + 1);
  });

  it('fetches at most once per cooldown, however many unknown keys tokens name', async () => {
    await pause(COOLDOWN_MS);
    const before = idp.fetches();
    // Signed by a real key, under kids the provider never served.
    const forged = await Promise.all(
      Array.from({ length: 20 }, (_, index) => token({ ...second, kid: `forged-${index}` })),
    );
    const started = Date.now();
    const answers = await Promise.all(forged.map(ask));
    const elapsed = Date.now() - started;
    expect(answers.map(code)).toEqual(Array(20).fill('UNAUTHENTICATED'));
    // One fetch for the first, then none until a cooldown has passed (on a loaded machine the
    // twenty answers may take longer than one): never one per token.
    const fetched = idp.fetches() - before;
    expect(fetched).toBeGreaterThanOrEqual(1);
    expect(fetched).toBeLessThanOrEqual(1 + Math.floor(elapsed / COOLDOWN_MS));
  });

  it('keeps the keys it holds while the provider is down', async () => {
    await idp.close();
    await pause(COOLDOWN_MS);
    // An unknown key: a fetch is tried, fails, and the token is refused, clearly.
    const unknown = await ask(await token(await signingKey('2027-01')));
    expect(unknown.status).toBe(401);
    expect(unknown.errors?.[0]?.message).toMatch(/no applicable key found/);
    // The key held still verifies.
    expect(code(await ask(await token(second)))).toBe('ok');
  });
});

describe('JWT_JWKS_URL that does not answer at start', () => {
  it('fails the start of the kit, naming the URL and why', async () => {
    const idp = await keyServer();
    const url = idp.url;
    await idp.close();
    const outcome = await createTestApp('sqlite', {
      JWT_JWKS_URL: url,
      JWT_ISSUER: 'https://idp.test',
      JWT_AUDIENCE: 'scribe',
    }).then(
      async (sut) => {
        await sut.close();
        return 'started';
      },
      (error: unknown) => (error as Error).message,
    );
    expect(outcome).toMatch(
      new RegExp(`^JWT_JWKS_URL ${url.replace(/\./g, '\\.')} did not answer with a key set: `),
    );
    expect(outcome).toMatch(/ECONNREFUSED/);
  });

  it('fails `npm start`: exit 1 and one line saying why', async () => {
    const idp = await keyServer();
    const url = idp.url;
    await idp.close();
    const dataDir = await mkdtemp(join(tmpdir(), 'scribe-jwks-'));
    const child = spawn(process.execPath, [resolve('dist/main.js')], {
      env: {
        PATH: process.env.PATH ?? '',
        PORT: '0',
        NO_COLOR: '1',
        DATA_DIR: dataDir,
        JWT_JWKS_URL: url,
        JWT_ISSUER: 'https://idp.test',
        JWT_AUDIENCE: 'scribe',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    // 'close', not 'exit': the line looked for is the last the process prints.
    const exit = await new Promise<number | null>((done) => child.once('close', done));
    clearTimeout(timer);
    await rm(dataDir, { recursive: true, force: true });
    expect(exit).toBe(1);
    const failed = output.split('\n').filter((line) => line.includes('Failed to start'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(`Failed to start: JWT_JWKS_URL ${url} did not answer with a key set`);
    expect(output).not.toMatch(/^\s+at /m);
  });
});
