import { OrderKeyGenerator, formatOrderKey } from './order-key.js';

describe(OrderKeyGenerator.name, () => {
  it('issues keys that sort in issue order, even when the clock stands still or goes back', () => {
    const sut = new OrderKeyGenerator('abcd0123');
    const keys = [1000, 1000, 999, 1001, 5, 1001].map((now) => sut.next(now).key);
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('moves to the next millisecond when a millisecond runs out of counter values', () => {
    const sut = new OrderKeyGenerator('i');
    let last = sut.next(7);
    for (let i = 0; i < 1_000_000; i++) last = sut.next(7);
    expect(last.ms).toBe(8);
    expect(last.key).toBe(formatOrderKey(8, 0, 'i'));
  });

  it('pads so that string order equals numeric order', () => {
    expect(formatOrderKey(99, 0, 'x') < formatOrderKey(100, 0, 'x')).toBe(true);
    expect(formatOrderKey(100, 9, 'x') < formatOrderKey(100, 10, 'x')).toBe(true);
  });
});
