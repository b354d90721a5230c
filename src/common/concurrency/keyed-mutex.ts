import { Mutex, Semaphore } from 'async-mutex';

/**
 * A lock per key, created on first use and forgotten once nobody holds or waits for it, so a
 * million sessions leave no million locks behind.
 */
class KeyedLocks<Lock> {
  private readonly entries = new Map<string, { lock: Lock; users: number }>();

  constructor(private readonly create: () => Lock) {}

  async with<T>(key: string, task: (lock: Lock) => Promise<T>): Promise<T> {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { lock: this.create(), users: 0 };
      this.entries.set(key, entry);
    }
    entry.users += 1;
    try {
      return await task(entry.lock);
    } finally {
      entry.users -= 1;
      if (entry.users === 0) this.entries.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

/** One `async-mutex` Mutex per key: a key's tasks run one at a time, in call order. */
export class KeyedMutex {
  private readonly locks = new KeyedLocks(() => new Mutex());

  runExclusive<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.locks.with(key, (mutex) => mutex.runExclusive(task));
  }

  /** Keys currently held or waited for. */
  get size(): number {
    return this.locks.size;
  }
}

// Readers of one key at once; past this many, a reader waits for one to finish.
const READERS_AT_ONCE = 1024;

/**
 * Readers and writers per key: a key's readers run together, its writers alone, in call order
 * (a waiting writer holds back the readers that come after it, so a stream of readers cannot
 * starve it). Built on async-mutex's weighted Semaphore: a reader takes one unit, a writer all.
 */
export class KeyedReadWriteLock {
  private readonly locks = new KeyedLocks(() => new Semaphore(READERS_AT_ONCE));

  read<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.locks.with(key, (semaphore) => semaphore.runExclusive(task, 1));
  }

  write<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.locks.with(key, (semaphore) => semaphore.runExclusive(task, READERS_AT_ONCE));
  }

  /** Keys currently held or waited for. */
  get size(): number {
    return this.locks.size;
  }
}
