import { randomFillSync } from 'node:crypto';
import { TimeOrderedIds } from './time-ordered-ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The id's 128 bits as a bigint. */
const bitsOf = (id: string) => BigInt(`0x${id.replaceAll('-', '')}`);
/** The 30-bit counter: 12 bits after the version, 18 after the variant. */
const counterOf = (id: string) => {
  const bits = bitsOf(id);
  return Number((((bits >> 64n) & 0xfffn) << 18n) | ((bits >> 44n) & 0x3ffffn));
};
const msOf = (id: string) => Number(bitsOf(id) >> 80n);
/** The 44 bits after the counter. */
const randomOf = (id: string) => bitsOf(id) & 0xfffffffffffn;

/** A fill that writes `pattern` over and over, and counts its calls. */
function patterned(pattern: number[]) {
  const fill = Object.assign(
    (bytes: Buffer) => {
      fill.calls += 1;
      for (let index = 0; index < bytes.length; index++) {
        bytes[index] = pattern[index % pattern.length];
      }
    },
    { calls: 0 },
  );
  return fill;
}

describe(TimeOrderedIds.name, () => {
  it('writes a version 7, RFC 9562 variant UUID with the milliseconds first', () => {
    const ids = new TimeOrderedIds(() => 0x0123456789ab);

    const id = ids.next();

    expect(id).toMatch(V7);
    expect(id.startsWith('01234567-89ab-7')).toBe(true);
    expect(msOf(id)).toBe(0x0123456789ab);
  });

  it('writes every byte of the milliseconds, the seed and the random bits where they belong', () => {
    // Seed bytes 0x9a 0xbc 0xde 0xf1 (below 2^29: 0x1abcdef1), then 0x23 0x45 0x67 0x89 0xab 0xcd.
    const ids = new TimeOrderedIds(
      () => 0xfedcba987654,
      patterned([0x9a, 0xbc, 0xde, 0xf1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd]),
    );

    const id = ids.next();

    // counter 0x1abcdef1 = 0b01 1010 1011 1100 1101 1110 1111 0001:
    // first 12 bits 0x6af, then 6 bits 0x0d, 8 bits 0xef, 4 bits 0x1.
    expect(id).toBe('fedcba98-7654-76af-8def-13456789abcd');
    expect(counterOf(id)).toBe(0x1abcdef1);
  });

  it('counts on from the last id within one millisecond', () => {
    const ids = new TimeOrderedIds(() => 1000, patterned([0, 0, 0, 5, 1, 2, 3, 4, 5, 6]));

    const made = Array.from({ length: 3 }, () => ids.next());

    expect(made.map(counterOf)).toEqual([5, 6, 7]);
    expect(made.map(msOf)).toEqual([1000, 1000, 1000]);
    expect([...made].sort()).toEqual(made);
  });

  it('seeds the counter afresh each new millisecond', () => {
    let now = 1000;
    const fill = patterned([
      0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 9, 9, 9, 9, 9, 9,
    ]);
    const ids = new TimeOrderedIds(() => now, fill);

    const first = ids.next();
    now = 1001;
    const second = ids.next();

    // 0xffffffff wraps to 2^29 - 1, the largest seed; the second id's seed bytes are 0 0 0 7.
    expect(counterOf(first)).toBe(2 ** 29 - 1);
    expect(counterOf(second)).toBe(7);
    expect(msOf(second)).toBe(1001);
    expect(second > first).toBe(true);
  });

  it('keeps the last milliseconds and counts on while the clock steps back', () => {
    let now = 5000;
    const ids = new TimeOrderedIds(() => now, patterned([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
    const first = ids.next();

    now = 4000;
    const second = ids.next();

    expect(msOf(second)).toBe(5000);
    expect(counterOf(second)).toBe(counterOf(first) + 1);
    expect(second > first).toBe(true);
  });

  it('takes the next millisecond when the counter overflows, and counts from zero', () => {
    // A 3-bit counter seeded at 3 (below 4): 3, 4, 5, 6, 7, then it overflows.
    const ids = new TimeOrderedIds(() => 1000, patterned([0, 0, 0, 3, 0, 0, 0, 0, 0, 0]), 3);

    const made = Array.from({ length: 6 }, () => ids.next());

    expect(made.map(counterOf)).toEqual([3, 4, 5, 6, 7, 0]);
    expect(made.map(msOf)).toEqual([1000, 1000, 1000, 1000, 1000, 1001]);
    expect([...made].sort()).toEqual(made);
    // And that millisecond counts on, though the clock has not reached it.
    expect(counterOf(ids.next())).toBe(1);
  });

  it('draws random bytes in one call per 819 ids, and a fresh 10 for each id', () => {
    const fill = Object.assign((bytes: Buffer) => ((fill.calls += 1), randomFillSync(bytes)), {
      calls: 0,
    });
    const ids = new TimeOrderedIds(Date.now, fill);

    const made = Array.from({ length: 819 }, () => ids.next());
    expect(fill.calls).toBe(1);
    made.push(ids.next());
    expect(fill.calls).toBe(2);

    expect(new Set(made.map(randomOf)).size).toBe(made.length);
  });

  it('changes only the random bits and the counter from one id to the next', () => {
    const fill = patterned([
      0, 0, 0, 0, 0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6,
    ]);
    const ids = new TimeOrderedIds(() => 42, fill);

    expect([ids.next(), ids.next()]).toEqual([
      '00000000-002a-7000-8000-0feeddccbbaa',
      '00000000-002a-7000-8000-110203040506',
    ]);
  });

  it('with the clock and the system generator, sorts in the order it made them', () => {
    const ids = new TimeOrderedIds();
    const before = Date.now();

    const made = Array.from({ length: 20_000 }, () => ids.next());

    expect(made.every((id) => V7.test(id))).toBe(true);
    expect(new Set(made).size).toBe(made.length);
    expect([...made].sort()).toEqual(made);
    expect(msOf(made[0])).toBeGreaterThanOrEqual(before);
    expect(msOf(made.at(-1) as string)).toBeLessThanOrEqual(Date.now());
  });
});
