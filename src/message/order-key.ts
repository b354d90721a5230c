import { randomBytes } from 'node:crypto';

const COUNTER_LIMIT = 1_000_000;
const ORDER_KEY = /^(\d{15})\.(\d{6})\.([0-9a-z]{1,16})$/;

/**
 * The instance's one clock for the journal and the database: a hybrid logical clock. It hands
 * out keys that sort (as plain strings) in the order they were issued: epoch milliseconds, a
 * counter within the millisecond, then an id for this process so that two instances sharing a
 * database never issue the same key. Its time is the wall clock's, but it never goes back, and
 * it is moved on (observe) past every time it sees: the journal at adoption, the newest stored
 * message and tombstone at start, tombstones read at write-back, commits of other instances.
 * The keys a write derives from what a session holds (keysAfter) do not move it: they have a
 * name of their own, and a clock far ahead would spread through them.
 * Tombstones are stamped from it too (stamp), so a message accepted here after a deletion has a
 * later time than the deletion whatever the wall clock did in between.
 *
 * Provided as one instance per process (ScribeConfigModule), so that tests and other modules
 * inject, or override, the same clock.
 */
export class OrderKeyGenerator {
  private lastMs = 0;
  private counter = 0;

  constructor(
    readonly instanceId: string = randomBytes(4).toString('hex'),
    private readonly wall: () => number = Date.now,
  ) {}

  /** Returns the next key and the (monotonic) millisecond it stands for. */
  next(now: number = this.wall()): { key: string; ms: number } {
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
   * A time for an event (a tombstone) that is at or after every key issued so far and before
   * every key issued from now on: a message accepted later is never taken for older than it.
   */
  stamp(now: number = this.wall()): number {
    const { ms } = this.next(now);
    this.counter = COUNTER_LIMIT - 1;
    return ms;
  }

  /**
   * Keys issued from now on sort after every key of millisecond `ms`: after a restart, messages
   * accepted by an earlier run (and replayed from the journal) must stay before new ones even
   * when the clock went back meanwhile.
   */
  floor(ms: number): void {
    if (Number.isSafeInteger(ms) && ms > this.lastMs) {
      this.lastMs = ms;
      this.counter = COUNTER_LIMIT - 1;
    }
  }

  /** The newest time the clock stands at (0 before any). */
  get latest(): number {
    return this.lastMs;
  }

  /** The wall clock's reading, which the clock itself may be ahead of. */
  wallNow(): number {
    return this.wall();
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

// The millisecond part of a key of another format, if it starts with one.
const MS_PREFIX = /^(\d{15})/;

/**
 * What ends a derived key (see keysAfter) after the instance's id. It is no hex digit, and an
 * instance id is hex (ScribeInstance): no clock issues a key with this suffix.
 */
export const DERIVED_MARKER = 'r';

/**
 * `count` keys of this instance, in order, after `storedMax` (the greatest key a session holds):
 * the keys a write gives its records when the clock that timed them is behind what is stored
 * (see placeAfterStored). They follow the max in its millisecond, rolling to the next one when
 * the counter runs out, as the clock would. A max of another format is passed by starting at
 * the millisecond after its numeric prefix; one without a prefix (no key Scribe writes: the
 * journal and cursors refuse them) gives null, and the records keep their keys.
 *
 * They end in the instance's id and DERIVED_MARKER, a name no clock issues, so that the clock
 * need not move past them: a max from a clock far ahead would otherwise carry that clock into
 * this one, and from it into the times of every session and tombstone it stamps (a deletion
 * stamped days ahead drops, at write-back, what another instance accepted after it). They
 * cannot be the same as another instance's keys or derived keys (their suffix has that
 * instance's id), nor as this clock's (no marker), nor as each other: a write computes them
 * from the max of the session holding its row lock, which is at or after every derived key
 * committed before it, and within a write their counters differ.
 */
export function keysAfter(storedMax: string, count: number, instanceId: string): string[] | null {
  const parsed = parseOrderKey(storedMax);
  let ms: number;
  let counter: number;
  if (parsed) {
    ms = parsed.ms;
    counter = parsed.counter + 1;
  } else {
    const prefix = MS_PREFIX.exec(storedMax);
    if (!prefix) return null;
    ms = Number(prefix[1]) + 1;
    counter = 0;
  }
  const keys: string[] = [];
  for (let i = 0; i < count; i++, counter++) {
    if (counter >= COUNTER_LIMIT) {
      ms += 1;
      counter = 0;
    }
    keys.push(formatOrderKey(ms, counter, `${instanceId}${DERIVED_MARKER}`));
  }
  return keys;
}
