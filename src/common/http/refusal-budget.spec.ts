import { RefusalBudget, sourceKey } from './refusal-budget.js';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('RefusalBudget', () => {
  it(`serves a source until it has spent its budget, then says how long to wait`, () => {
    const time = clock();
    const budget = new RefusalBudget(3, 100, time.now);
    for (let i = 0; i < 3; i++) {
      expect(budget.retryAfterSeconds('a')).toBe(0);
      budget.charge('a');
    }
    // Three a minute: one comes back every 20 s.
    expect(budget.retryAfterSeconds('a')).toBe(20);
    time.advance(19_000);
    expect(budget.retryAfterSeconds('a')).toBe(1);
    time.advance(1_000);
    expect(budget.retryAfterSeconds('a')).toBe(0);
  });

  it('rounds the wait up to whole seconds and grows it with the debt', () => {
    const time = clock();
    const budget = new RefusalBudget(60, 100, time.now);
    for (let i = 0; i < 62; i++) budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBe(3);
    time.advance(2_500);
    expect(budget.retryAfterSeconds('a')).toBe(1);
  });

  it('counts reservations as spent until they are given back, and never charges them', () => {
    const budget = new RefusalBudget(2, 100, clock().now);
    budget.reserve('a');
    expect(budget.retryAfterSeconds('a')).toBe(0);
    budget.reserve('a');
    // Two in flight: a third waits for one of them (30 s, the time one refusal takes back).
    expect(budget.retryAfterSeconds('a')).toBe(30);
    expect(budget.retryAfterSeconds('b')).toBe(0);
    budget.release('a');
    expect(budget.retryAfterSeconds('a')).toBe(0);
    budget.release('a');
    budget.release('a');
    // Given back in full, and no further: a release without a reservation adds nothing.
    budget.charge('a');
    budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBe(30);
  });

  it('reserves nothing when budgets are off', () => {
    const budget = new RefusalBudget(0, 100, clock().now);
    for (let i = 0; i < 5; i++) budget.reserve('a');
    expect(budget.retryAfterSeconds('a')).toBe(0);
  });

  it('keeps each source to its own budget', () => {
    const budget = new RefusalBudget(1, 100, clock().now);
    budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBeGreaterThan(0);
    expect(budget.retryAfterSeconds('b')).toBe(0);
  });

  it('refills to the full budget and no further', () => {
    const time = clock();
    const budget = new RefusalBudget(2, 100, time.now);
    budget.charge('a');
    time.advance(10 * 60_000);
    budget.charge('a');
    budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBe(30);
  });

  it('refills from the time of the last charge', () => {
    const time = clock();
    const budget = new RefusalBudget(2, 100, time.now);
    budget.charge('a');
    time.advance(15_000);
    budget.charge('a');
    // 2 - 1 + 0.5 - 1 = 0.5 tokens: half a token, 15 s, short.
    expect(budget.retryAfterSeconds('a')).toBe(15);
  });

  it('is off at 0: nobody is ever turned away', () => {
    const budget = new RefusalBudget(0, 100, clock().now);
    for (let i = 0; i < 1000; i++) budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBe(0);
  });

  it('forgets the oldest source past its bound, which then starts over', () => {
    const budget = new RefusalBudget(1, 2, clock().now);
    budget.charge('a');
    budget.charge('b');
    expect(budget.retryAfterSeconds('a')).toBeGreaterThan(0);
    budget.charge('c');
    expect(budget.retryAfterSeconds('a')).toBe(0);
    expect(budget.retryAfterSeconds('b')).toBeGreaterThan(0);
    expect(budget.retryAfterSeconds('c')).toBeGreaterThan(0);
  });

  it('counts a charged source as the newest, so a busy source is the last forgotten', () => {
    const budget = new RefusalBudget(5, 2, clock().now);
    budget.charge('a');
    budget.charge('b');
    budget.charge('a');
    budget.charge('c');
    expect(budget.retryAfterSeconds('b')).toBe(0);
    for (let i = 0; i < 3; i++) budget.charge('a');
    expect(budget.retryAfterSeconds('a')).toBeGreaterThan(0);
  });
});

describe('sourceKey', () => {
  it.each([
    ['192.0.2.7', '192.0.2.7'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['::FFFF:192.0.2.7', '192.0.2.7'],
    ['::ffff:c000:207', '192.0.2.7'],
    ['64:ff9b::192.0.2.7', '192.0.2.7'],
    ['64:ff9b::102:304', '1.2.3.4'],
    ['2001:db8::1.2.3.4', '2001:db8:0:0::/64'],
    ['::1.2.3.4', '0:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:DB8::1', '2001:db8:0:0::/64'],
    ['2001:db8:0:0:ffff::9', '2001:db8:0:0::/64'],
    ['fe80::1:2:3:4', 'fe80:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['1:2:3::', '1:2:3:0::/64'],
    ['1:2:3:4:5::', '1:2:3:4::/64'],
    ['::', '0:0:0:0::/64'],
    ['not an address', 'not-an-address'],
    ['x'.repeat(12_000), 'not-an-address'],
    ['', 'not-an-address'],
    ['1.2.3', 'not-an-address'],
  ])('keys %p as %p', (address, key) => {
    expect(sourceKey(address)).toBe(key);
  });

  it('gives every host of one /64 the same key, and its neighbour another', () => {
    expect(sourceKey('2001:db8::1')).toBe(sourceKey('2001:db8::ffff:ffff:ffff:ffff'));
    expect(sourceKey('2001:db8:0:1::1')).not.toBe(sourceKey('2001:db8::1'));
  });
});
