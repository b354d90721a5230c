import { OrderKeyGenerator, formatOrderKey, parseOrderKey } from './order-key.js';

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

describe(parseOrderKey.name, () => {
  it('reads back what formatOrderKey wrote', () => {
    expect(parseOrderKey(formatOrderKey(1764460800123, 42, 'ab12cd34'))).toEqual({
      ms: 1764460800123,
      counter: 42,
      instanceId: 'ab12cd34',
    });
  });

  it.each([
    ['too short a millisecond part', '1764460800123.000042.ab12cd34'],
    ['a missing instance id', '001764460800123.000042.'],
    ['upper-case instance id', '001764460800123.000042.AB12'],
    ['trailing text', '001764460800123.000042.ab12cd34 '],
    ['leading text', 'x001764460800123.000042.ab12cd34'],
    ['an instance id over 16 characters', '001764460800123.000042.abcdefghijklmnopq'],
  ])('refuses %s', (_case, key) => {
    expect(parseOrderKey(key)).toBeNull();
  });
});

describe('OrderKeyGenerator.floor', () => {
  it('issues keys after every key of the floor millisecond, even when the clock is behind it', () => {
    const earlier = new OrderKeyGenerator('a');
    const replayed = earlier.next(5000).key;
    const sut = new OrderKeyGenerator('b');

    sut.floor(5000);
    const next = sut.next(10);

    expect(next.key > replayed).toBe(true);
    expect(next.ms).toBe(5001);
  });

  it('never moves the keys back', () => {
    const sut = new OrderKeyGenerator('a');
    const first = sut.next(9000).key;

    sut.floor(100);

    expect(sut.next(9000).key > first).toBe(true);
  });
});
