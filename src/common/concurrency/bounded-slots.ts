/** Gives a slot back; calling it again does nothing. */
export type ReleaseSlot = () => void;

/**
 * A counting semaphore whose waits end: `acquire` resolves with a release once a slot is free,
 * or with undefined after `timeoutMs` or when `signal` aborts (outcomes as values: waiting
 * too long is a normal answer, not an exception). Waiters are served in arrival order.
 */
export class BoundedSlots {
  private active = 0;
  private readonly waiting: ((release: ReleaseSlot) => void)[] = [];

  constructor(
    private readonly size: number,
    private readonly timeoutMs: number,
  ) {}

  acquire(signal?: AbortSignal): Promise<ReleaseSlot | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.active < this.size) {
      this.active += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const give = (release: ReleaseSlot) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
        resolve(release);
      };
      const giveUp = () => {
        const at = this.waiting.indexOf(give);
        if (at >= 0) this.waiting.splice(at, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
        resolve(undefined);
      };
      const timer = setTimeout(giveUp, this.timeoutMs);
      signal?.addEventListener('abort', giveUp, { once: true });
      this.waiting.push(give);
    });
  }

  status(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter: nobody can take it in between.
      if (next) next(this.releaser());
      else this.active -= 1;
    };
  }
}
