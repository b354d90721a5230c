import { randomFillSync } from 'node:crypto';

/** Fills a buffer with random bytes (crypto's randomFillSync unless a test gives its own). */
export type RandomFill = (bytes: Buffer) => unknown;

// A counter of 30 bits follows the milliseconds: the 12 bits after the version, and the 18
// after the variant. Each millisecond seeds it at random below half its limit, leaving at
// least 2^29 steps before it overflows.
const COUNTER_BITS = 30;
// Random bytes per id: 4 for a counter's seed, then 6 for the bits after the counter.
const RANDOM_BYTES_PER_ID = 10;
// Random bytes drawn at once: one call to the system's generator per 819 ids.
const POOL_BYTES = 8190;
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * UUIDv7 strings (RFC 9562): 48 bits of Unix milliseconds, the version, a 30-bit counter split
 * around the variant (the RFC's "fixed bit-length dedicated counter", method 1), then 44 random
 * bits. Ids made one after another in this process sort in the order they were made, even when
 * the clock stands still or steps back: they take the last id's milliseconds and count on.
 *
 * Why not the uuid package's v7, which behaves alike: for each id it takes 16 random bytes
 * through a fresh copy, calls the system's generator every 16 ids, and builds the string by
 * concatenating 36 pieces. That was about 1.1 KB of transient heap per message in a batch
 * append, second only to GraphQL's input coercion, and 0.45 µs; this writes the 36 characters
 * into one buffer and reads them out as one string (npm run bench, memory).
 */
export class TimeOrderedIds {
  private readonly pool = Buffer.allocUnsafeSlow(POOL_BYTES);
  private taken = POOL_BYTES;
  private readonly text = Buffer.alloc(36, '-');
  private lastMs = -Infinity;
  private counter = 0;
  private readonly counterLimit: number;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly fill: RandomFill = randomFillSync,
    /** At most 30; fewer only in a test of what follows an overflow. */
    counterBits = COUNTER_BITS,
  ) {
    this.counterLimit = 2 ** counterBits;
  }

  next(): string {
    if (this.taken + RANDOM_BYTES_PER_ID > POOL_BYTES) {
      this.fill(this.pool);
      this.taken = 0;
    }
    const random = this.taken;
    this.taken += RANDOM_BYTES_PER_ID;
    const now = this.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.counter = this.pool.readUInt32BE(random) % (this.counterLimit / 2);
    } else if (++this.counter === this.counterLimit) {
      // 2^29 ids or more in one millisecond: borrow the next one, as the RFC allows.
      this.lastMs += 1;
      this.counter = 0;
    }
    this.write(random + 4);
    return this.text.toString('latin1');
  }

  /** The id's 36 characters into `text`: its 16 bytes, two hex digits each, dashes between. */
  private write(random: number): void {
    const ms = this.lastMs;
    const high = Math.floor(ms / 2 ** 16);
    const counter = this.counter;
    const pool = this.pool;
    this.byte(0, high >>> 24);
    this.byte(2, high >>> 16);
    this.byte(4, high >>> 8);
    this.byte(6, high);
    this.byte(9, ms >>> 8);
    this.byte(11, ms);
    // version 7, then the counter's first 12 bits
    this.byte(14, 0x70 | (counter >>> 26));
    this.byte(16, counter >>> 18);
    // variant 0b10, then the counter's last 18 bits and 44 random bits
    this.byte(19, 0x80 | ((counter >>> 12) & 0x3f));
    this.byte(21, counter >>> 4);
    this.byte(24, ((counter & 0xf) << 4) | (pool[random] & 0xf));
    for (let index = 1; index < 6; index++) this.byte(24 + 2 * index, pool[random + index]);
  }

  /** The last 8 bits of `value` as two hex digits at `at`. */
  private byte(at: number, value: number): void {
    this.text[at] = HEX[(value >>> 4) & 0xf];
    this.text[at + 1] = HEX[value & 0xf];
  }
}
