import { randomBytes } from 'node:crypto';

const COUNTER_LIMIT = 1_000_000;
const ORDER_KEY = /^(\d{15})\.(\d{6})\.([0-9a-z]{1,16})$/;

/**
 * Hands out keys that sort (as plain strings) in the order they were issued: epoch
 * milliseconds, a counter within the millisecond, then an id for this process so that two
 * instances sharing a database never issue the same key. The clock is never allowed to go
 * backwards, so a key issued later never sorts earlier.
 */
export class OrderKeyGenerator {
  private lastMs = 0;
  private counter = 0;

  constructor(readonly instanceId: string = randomBytes(4).toString('hex')) {}

  /** Returns the next key and the (monotonic) millisecond it stands for. */
  next(now: number = Date.now()): { key: string; ms: number } {
    if (now > this.lastMs) {
      this.lastMs = now;
      this.counter = 0;
    } else if (++this.counter >= COUNTER_LIMIT) {
      this.lastMs += 1;
      this.counter = 0;
    }
    return { key: formatOrderKey(this.lastMs, this.counter, this.instanceId), ms: this.lastMs };
  }

  /**
   * Keys issued from now on sort after every key of millisecond `ms`: after a restart, messages
   * accepted by an earlier run (and replayed from the journal) must stay before new ones even
   * when the clock went back meanwhile.
   */
  floor(ms: number): void {
    if (ms > this.lastMs) {
      this.lastMs = ms;
      this.counter = COUNTER_LIMIT - 1;
    }
  }
}

export function formatOrderKey(ms: number, counter: number, instanceId: string): string {
  return `${ms.toString().padStart(15, '0')}.${counter.toString().padStart(6, '0')}.${instanceId}`;
}

/** The parts of a key this service issued; null for anything else. */
export function parseOrderKey(
  key: string,
): { ms: number; counter: number; instanceId: string } | null {
  const match = ORDER_KEY.exec(key);
  if (!match) return null;
  return { ms: Number(match[1]), counter: Number(match[2]), instanceId: match[3] };
}
