/**
 * Slots held per key (a source's connections, a principal's subscriptions), at most `limit`
 * each. The holder gives back what it took, once: a key's count never goes below zero, and a
 * key holding nothing has no entry, so memory follows what is held, not who ever asked.
 */
export class SlotCounts {
  private readonly counts = new Map<string, number>();
  private held = 0;

  constructor(readonly limit: number) {}

  /** Slots held in all. */
  get total(): number {
    return this.held;
  }

  heldBy(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Whether `key` holds its most. */
  full(key: string): boolean {
    return this.heldBy(key) >= this.limit;
  }

  /** Takes a slot for `key`; false, taking none, when it holds its most. */
  take(key: string): boolean {
    const count = this.heldBy(key);
    if (count >= this.limit) return false;
    this.counts.set(key, count + 1);
    this.held += 1;
    return true;
  }

  /** Gives back one slot of `key`; nothing when it holds none. */
  give(key: string): void {
    const count = this.heldBy(key);
    if (count === 0) return;
    if (count === 1) this.counts.delete(key);
    else this.counts.set(key, count - 1);
    this.held -= 1;
  }

  /** Keys holding a slot (for tests and metrics). */
  get keys(): number {
    return this.counts.size;
  }
}
