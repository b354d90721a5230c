import { getEventListeners } from 'node:events';
import { jest } from '@jest/globals';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { type ScribeException } from '../common/errors/scribe.exception.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { KeyedLoader, type KeyedSource } from './keyed-loader.js';

/** A source whose loads the test releases one by one; records what was loaded and settled. */
class Harness implements KeyedSource<string> {
  readonly loads: { key: string; done: Deferred<string> }[] = [];
  readonly settlements: { key: string; value: string; current: boolean }[] = [];
  counted = 0;
  /** Runs at the start of every load, inside its async context. */
  onLoad: ((key: string) => void) | null = null;
  readonly sut: KeyedLoader<string>;

  constructor(
    concurrency = 1,
    timeoutMs = 10_000,
    private readonly nested?: (key: string) => Promise<string>,
  ) {
    this.sut = new KeyedLoader(this, { concurrency, timeoutMs, noun: 'thing' });
  }

  load(key: string): Promise<string> {
    this.counted += 1;
    this.onLoad?.(key);
    if (this.nested) return this.nested(key);
    const done = deferred<string>();
    this.loads.push({ key, done });
    return done.promise;
  }

  settled(key: string, value: string, current: boolean): void {
    this.settlements.push({ key, value, current });
  }

  release(key: string, value = `${key}-value`): void {
    const index = this.loads.findIndex((load) => load.key === key);
    if (index < 0) throw new Error(`no load of ${key} running`);
    this.loads.splice(index, 1)[0].done.resolve(value);
  }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(KeyedLoader.name, () => {
  it('refuses a concurrency below 1 or a timeout of 0', () => {
    expect(() => new Harness(0)).toThrow(
      new RangeError('concurrency must be a positive integer, got 0'),
    );
    expect(() => new Harness(1.5)).toThrow(RangeError);
    expect(() => new Harness(1, 0)).toThrow(new RangeError('timeoutMs must be positive, got 0'));
  });

  it('loads a key once for every caller that asks while it runs, and reports it settled', async () => {
    const h = new Harness();
    const answers = [h.sut.get('a'), h.sut.get('a'), h.sut.get('a')];
    await tick();
    expect(h.loads.map((load) => load.key)).toEqual(['a']);
    expect(h.sut.status()).toEqual({ activeLoads: 1, waitingLoads: 0, inFlight: 1 });
    h.release('a');
    expect(await Promise.all(answers)).toEqual(['a-value', 'a-value', 'a-value']);
    expect(h.settlements).toEqual([{ key: 'a', value: 'a-value', current: true }]);
    expect(h.counted).toBe(1);
    expect(h.sut.status()).toEqual({ activeLoads: 0, waitingLoads: 0, inFlight: 0 });
    expect(h.sut.isLoading('a')).toBe(false);
  });

  it('runs at most `concurrency` loads, the others waiting for a slot', async () => {
    const h = new Harness(2);
    const answers = ['a', 'b', 'c'].map((key) => h.sut.get(key));
    await tick();
    expect(h.loads.map((load) => load.key)).toEqual(['a', 'b']);
    expect(h.sut.status()).toEqual({ activeLoads: 2, waitingLoads: 1, inFlight: 3 });
    h.release('a');
    await tick();
    expect(h.loads.map((load) => load.key)).toEqual(['b', 'c']);
    h.release('b');
    h.release('c');
    expect(await Promise.all(answers)).toEqual(['a-value', 'b-value', 'c-value']);
  });

  it('does not keep, nor let new callers join, a running load invalidated meanwhile', async () => {
    const h = new Harness(2);
    const first = h.sut.get('a');
    await tick();
    h.sut.invalidate('a', { evenWaiting: false });
    const second = h.sut.get('a');
    await tick();
    expect(h.loads.map((load) => load.key)).toEqual(['a', 'a']);
    h.release('a', 'old');
    h.release('a', 'new');
    expect([await first, await second]).toEqual(['old', 'new']);
    expect(h.settlements).toEqual([
      { key: 'a', value: 'old', current: false },
      { key: 'a', value: 'new', current: true },
    ]);
  });

  it('lets a load still waiting for a slot stand unless told to invalidate even that', async () => {
    const h = new Harness(1);
    void h.sut.get('busy');
    const waiting = h.sut.get('a');
    await tick();
    h.sut.invalidate('a', { evenWaiting: false });
    const joined = h.sut.get('a');
    h.release('busy');
    await tick();
    h.release('a');
    expect([await waiting, await joined]).toEqual(['a-value', 'a-value']);
    expect(h.settlements.at(-1)).toEqual({ key: 'a', value: 'a-value', current: true });

    void h.sut.get('busy');
    const waitingAgain = h.sut.get('a');
    await tick();
    h.sut.invalidate('a');
    h.release('busy');
    await tick();
    h.release('a');
    await waitingAgain;
    expect(h.settlements.at(-1)).toEqual({ key: 'a', value: 'a-value', current: false });
  });

  it('gives up a wait for a slot after timeoutMs, naming the noun and key', async () => {
    jest.useFakeTimers();
    try {
      const h = new Harness(1, 50);
      void h.sut.get('busy');
      const late = h.sut.get('late').then(
        () => undefined,
        (error: unknown) => error as ScribeException,
      );
      await jest.advanceTimersByTimeAsync(60);
      const error = await late;
      expect(error?.code).toBe(ScribeErrorCode.SessionResolveTimeout);
      expect(error?.message).toBe('No thing load slot freed up within 50 ms (thing late)');
    } finally {
      jest.useRealTimers();
    }
  });

  it('lets a caller abort its own wait without stopping the load for the others', async () => {
    const h = new Harness();
    const controller = new AbortController();
    const leader = h.sut.get('a', controller.signal);
    const follower = h.sut.get('a');
    await tick();
    controller.abort(new Error('client went away'));
    await expect(leader).rejects.toThrow('client went away');
    h.release('a');
    expect(await follower).toBe('a-value');
    await expect(h.sut.get('b', controller.signal)).rejects.toThrow('client went away');
  });

  it('bounds a follower wait on its leader by timeoutMs, naming the noun and key', async () => {
    jest.useFakeTimers();
    try {
      const h = new Harness(1, 50);
      void h.sut.get('slow');
      const follower = h.sut.get('slow').then(
        () => undefined,
        (error: unknown) => error as ScribeException,
      );
      await jest.advanceTimersByTimeAsync(60);
      const error = await follower;
      expect(error?.code).toBe(ScribeErrorCode.SessionResolveTimeout);
      expect(error?.message).toBe('Thing slow did not finish loading within 50 ms');
    } finally {
      jest.useRealTimers();
    }
  });

  it('turns an abort reason that is not an Error into an AbortError that carries it', async () => {
    const h = new Harness();
    const controller = new AbortController();
    const waiting = h.sut.get('a', controller.signal).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    await tick();
    controller.abort('gone');
    const error = await waiting;
    expect(error).toMatchObject({ name: 'AbortError', message: 'The operation was aborted' });
    expect(error?.cause).toBe('gone');
    h.release('a');
  });

  it('runs a nested load of the same key beside its own flight instead of waiting on itself', async () => {
    const holder: { sut?: KeyedLoader<string> } = {};
    let depth = 0;
    const h = new Harness(1, 10_000, async (key) => {
      depth += 1;
      expect(holder.sut?.insideLoadOf(key)).toBe(true);
      if (depth === 1) return `outer(${await holder.sut?.get(key)})`;
      return 'inner';
    });
    const sut = (holder.sut = h.sut);
    expect(sut.insideLoadOf('a')).toBe(false);
    expect(await sut.get('a')).toBe('outer(inner)');
  });

  it('gives work started inside a load but running after it returned none of its privileges', async () => {
    const h = new Harness(1);
    const aReturned = deferred<void>();
    let late: { inside: boolean; b: Promise<string> } | undefined;
    h.onLoad = (key) => {
      // Registered inside the load of a: it runs in that load's async context
      if (key === 'a') {
        void aReturned.promise.then(() => {
          late = { inside: h.sut.insideLoadOf('a'), b: h.sut.get('b') };
        });
      }
    };
    const a = h.sut.get('a');
    await tick();
    h.release('a');
    expect(await a).toBe('a-value');
    void h.sut.get('busy');
    await tick();
    aReturned.resolve();
    await tick();

    expect(late?.inside).toBe(false);
    // b queues for the slot busy holds instead of running beside it as a nested load would
    expect(h.loads.map((load) => load.key)).toEqual(['busy']);
    expect(h.sut.status()).toEqual({ activeLoads: 1, waitingLoads: 1, inFlight: 2 });
    h.release('busy');
    await tick();
    h.release('b');
    expect(await late?.b).toBe('b-value');
  });

  it('invalidates a flight led from inside another load, which new callers then do not join', async () => {
    const h = new Harness(1);
    let inner: Promise<string> | undefined;
    h.onLoad = (key) => {
      if (key === 'outer') inner = h.sut.get('inner');
    };
    const outer = h.sut.get('outer');
    await tick();
    // inner runs under outer's slot: it is reading, so a write invalidates it
    expect(h.loads.map((load) => load.key)).toEqual(['inner', 'outer']);
    h.sut.invalidate('inner', { evenWaiting: false });
    const fresh = h.sut.get('inner');
    h.release('inner', 'old');
    h.release('outer');
    await tick();
    h.release('inner', 'new');

    expect([await inner, await fresh, await outer]).toEqual(['old', 'new', 'outer-value']);
    expect(h.settlements.filter((settled) => settled.key === 'inner')).toEqual([
      { key: 'inner', value: 'old', current: false },
      { key: 'inner', value: 'new', current: true },
    ]);
  });

  it('removes its abort listeners once the waits they guard are over', async () => {
    const h = new Harness();
    const controller = new AbortController();
    const leader = h.sut.get('a', controller.signal);
    const follower = h.sut.get('a', controller.signal);
    await tick();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(2);
    h.release('a');
    expect(await Promise.all([leader, follower])).toEqual(['a-value', 'a-value']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('clears the timer bounding a follower wait once its leader answers', async () => {
    jest.useFakeTimers();
    try {
      const h = new Harness(1, 50);
      const leader = h.sut.get('a');
      const follower = h.sut.get('a');
      await jest.advanceTimersByTimeAsync(0);
      expect(jest.getTimerCount()).toBe(1);
      h.release('a');
      expect(await Promise.all([leader, follower])).toEqual(['a-value', 'a-value']);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
