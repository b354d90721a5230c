import { Mutex } from 'async-mutex';

/**
 * One `async-mutex` Mutex per key, created on first use and forgotten once nobody holds or
 * waits for it, so a million sessions leave no million mutexes behind.
 */
export class KeyedMutex {
  private readonly entries = new Map<string, { mutex: Mutex; users: number }>();

  async runExclusive<T>(key: string, task: () => Promise<T>): Promise<T> {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { mutex: new Mutex(), users: 0 };
      this.entries.set(key, entry);
    }
    entry.users += 1;
    try {
      return await entry.mutex.runExclusive(task);
    } finally {
      entry.users -= 1;
      if (entry.users === 0) this.entries.delete(key);
    }
  }

  /** Keys currently held or waited for. */
  get size(): number {
    return this.entries.size;
  }
}
