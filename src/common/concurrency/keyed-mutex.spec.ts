import { KeyedMutex, KeyedReadWriteLock } from './keyed-mutex.js';
import { deferred } from '../testing/deferred.js';

/** Lets every pending promise callback run (a macrotask turn; not a timed wait). */
function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A task that reports when it starts and finishes only when the test releases it. */
class HeldTask<T> {
  readonly started = deferred();
  private readonly release = deferred<T>();
  hasStarted = false;

  readonly run = async (): Promise<T> => {
    this.hasStarted = true;
    this.started.resolve();
    return this.release.promise;
  };

  finish(value: T): void {
    this.release.resolve(value);
  }
}

describe(KeyedMutex.name, () => {
  let sut: KeyedMutex;

  beforeEach(() => {
    sut = new KeyedMutex();
  });

  it('returns what the task returns', async () => {
    await expect(sut.runExclusive('k', async () => 42)).resolves.toBe(42);
  });

  it('runs tasks of the same key one after another, in call order', async () => {
    const first = new HeldTask<string>();
    const second = new HeldTask<string>();
    const firstResult = sut.runExclusive('session-1', first.run);
    const secondResult = sut.runExclusive('session-1', second.run);

    await first.started.promise;
    await drainMicrotasks();
    expect(second.hasStarted).toBe(false);

    first.finish('one');
    await expect(firstResult).resolves.toBe('one');
    await second.started.promise;
    second.finish('two');
    await expect(secondResult).resolves.toBe('two');
  });

  it('runs tasks of different keys at the same time', async () => {
    const first = new HeldTask<string>();
    const second = new HeldTask<string>();
    const firstResult = sut.runExclusive('session-1', first.run);
    const secondResult = sut.runExclusive('session-2', second.run);

    // Both start while neither has finished.
    await Promise.all([first.started.promise, second.started.promise]);
    expect(sut.size).toBe(2);

    second.finish('two');
    await expect(secondResult).resolves.toBe('two');
    first.finish('one');
    await expect(firstResult).resolves.toBe('one');
  });

  it('counts a key while it is held or waited for and forgets it once idle', async () => {
    expect(sut.size).toBe(0);
    const first = new HeldTask<void>();
    const second = new HeldTask<void>();
    const firstDone = sut.runExclusive('k', first.run);
    const secondDone = sut.runExclusive('k', second.run);
    expect(sut.size).toBe(1);

    await first.started.promise;
    first.finish();
    await firstDone;
    // The waiter still needs the key.
    expect(sut.size).toBe(1);

    await second.started.promise;
    second.finish();
    await secondDone;
    expect(sut.size).toBe(0);
  });

  it('rejects the caller of a throwing task with its error', async () => {
    const boom = new Error('boom');

    await expect(
      sut.runExclusive('k', async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
  });

  it('releases the key when a task throws, so the next task of that key runs', async () => {
    const failing = new HeldTask<void>();
    const boom = new Error('boom');
    const failed = sut.runExclusive('k', async () => {
      await failing.run();
      throw boom;
    });
    const next = sut.runExclusive('k', async () => 'next ran');

    await failing.started.promise;
    failing.finish();

    await expect(failed).rejects.toBe(boom);
    await expect(next).resolves.toBe('next ran');
    expect(sut.size).toBe(0);
  });

  it('forgets a key whose only task threw', async () => {
    await expect(sut.runExclusive('k', () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );

    expect(sut.size).toBe(0);
  });

  it('serves a forgotten key again with a fresh lock', async () => {
    await sut.runExclusive('k', async () => undefined);
    expect(sut.size).toBe(0);
    const held = new HeldTask<void>();
    const done = sut.runExclusive('k', held.run);

    await held.started.promise;
    expect(sut.size).toBe(1);
    held.finish();
    await done;
    expect(sut.size).toBe(0);
  });
});

describe(KeyedReadWriteLock.name, () => {
  let sut: KeyedReadWriteLock;

  beforeEach(() => {
    sut = new KeyedReadWriteLock();
  });

  it('returns what the task returns, and rejects with what it throws', async () => {
    await expect(sut.read('k', async () => 'read')).resolves.toBe('read');
    await expect(sut.write('k', async () => 'written')).resolves.toBe('written');
    const boom = new Error('boom');
    await expect(sut.write('k', () => Promise.reject(boom))).rejects.toBe(boom);
    await expect(sut.read('k', () => Promise.reject(boom))).rejects.toBe(boom);
    expect(sut.size).toBe(0);
  });

  it("runs a key's readers together", async () => {
    const first = new HeldTask<string>();
    const second = new HeldTask<string>();
    const firstResult = sut.read('k', first.run);
    const secondResult = sut.read('k', second.run);

    await Promise.all([first.started.promise, second.started.promise]);
    expect(sut.size).toBe(1);
    first.finish('one');
    second.finish('two');
    await expect(Promise.all([firstResult, secondResult])).resolves.toEqual(['one', 'two']);
    expect(sut.size).toBe(0);
  });

  it('runs a writer alone: after the readers under way, before the readers that come after it', async () => {
    const reader = new HeldTask<void>();
    const writer = new HeldTask<void>();
    const later = new HeldTask<void>();
    const reading = sut.read('k', reader.run);
    const writing = sut.write('k', writer.run);
    const laterReading = sut.read('k', later.run);

    await reader.started.promise;
    await drainMicrotasks();
    expect(writer.hasStarted).toBe(false);
    expect(later.hasStarted).toBe(false);

    reader.finish();
    await reading;
    await writer.started.promise;
    await drainMicrotasks();
    expect(later.hasStarted).toBe(false);

    writer.finish();
    await writing;
    await later.started.promise;
    later.finish();
    await laterReading;
    expect(sut.size).toBe(0);
  });

  it('runs writers of one key one after another, and of different keys at once', async () => {
    const first = new HeldTask<void>();
    const second = new HeldTask<void>();
    const other = new HeldTask<void>();
    const firstDone = sut.write('k', first.run);
    const secondDone = sut.write('k', second.run);
    const otherDone = sut.write('other', other.run);

    await Promise.all([first.started.promise, other.started.promise]);
    await drainMicrotasks();
    expect(second.hasStarted).toBe(false);
    expect(sut.size).toBe(2);

    first.finish();
    await firstDone;
    await second.started.promise;
    second.finish();
    other.finish();
    await Promise.all([secondDone, otherDone]);
    expect(sut.size).toBe(0);
  });

  it('lets a writer go on after a reader that threw', async () => {
    await expect(sut.read('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');

    await expect(sut.write('k', async () => 'after')).resolves.toBe('after');
  });
});
