import {
  DERIVED_MARKER,
  OrderKeyGenerator,
  formatOrderKey,
  keysAfter,
  parseOrderKey,
} from './order-key.js';

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

describe('OrderKeyGenerator as the instance clock', () => {
  it('reads the wall clock it is given', () => {
    let wall = 4000;
    const sut = new OrderKeyGenerator('c', () => wall);

    expect(sut.next()).toEqual({ key: formatOrderKey(4000, 0, 'c'), ms: 4000 });
    wall = 4002;
    expect(sut.wallNow()).toBe(4002);
    expect(sut.next().ms).toBe(4002);
    expect(sut.latest).toBe(4002);
  });

  it('stamps a time at or after every key issued, and before every key issued later', () => {
    const sut = new OrderKeyGenerator('c', () => 100);
    const before = sut.next();

    const stamp = sut.stamp();
    const after = sut.next();

    expect(before.ms).toBe(100);
    expect(stamp).toBe(100);
    expect(after).toEqual({ key: formatOrderKey(101, 0, 'c'), ms: 101 });
  });

  it('stamps the wall clock when it is ahead of every key, then keys move past it', () => {
    let wall = 100;
    const sut = new OrderKeyGenerator('c', () => wall);
    sut.next();
    wall = 500;

    expect(sut.stamp()).toBe(500);
    wall = 200;
    expect(sut.next().ms).toBe(501);
  });

  it('stamps after a floor it was moved to, whatever the wall clock says', () => {
    const sut = new OrderKeyGenerator('c', () => 10);
    sut.floor(7_000);

    expect(sut.stamp()).toBe(7_001);
    expect(sut.latest).toBe(7_001);
  });

  it.each([
    ['not a number', Number.NaN],
    ['infinite', Number.POSITIVE_INFINITY],
    ['not whole', 1.5],
  ])('ignores a floor that is %s', (_case, ms) => {
    const sut = new OrderKeyGenerator('c', () => 1);

    sut.floor(ms);

    expect(sut.latest).toBe(0);
    expect(sut.next().ms).toBe(1);
  });

  it('takes a floor just above what it stands at, and ignores one equal to it', () => {
    const sut = new OrderKeyGenerator('c', () => 50);
    sut.next();

    sut.floor(50);
    expect(sut.next()).toEqual({ key: formatOrderKey(50, 1, 'c'), ms: 50 });
    sut.floor(51);
    expect(sut.next()).toEqual({ key: formatOrderKey(52, 0, 'c'), ms: 52 });
  });
});

describe(keysAfter.name, () => {
  it("follows the max in its millisecond, in this instance's name, in order", () => {
    const max = formatOrderKey(5000, 7, 'other');

    const keys = keysAfter(max, 3, 'b0b') as string[];

    expect(keys).toEqual([
      formatOrderKey(5000, 8, 'b0br'),
      formatOrderKey(5000, 9, 'b0br'),
      formatOrderKey(5000, 10, 'b0br'),
    ]);
    expect(keys[0] > max).toBe(true);
    expect([...keys].sort()).toEqual(keys);
  });

  it('rolls to the next millisecond when the counter runs out, as the clock does', () => {
    const max = formatOrderKey(5000, 999_998, 'other');

    const keys = keysAfter(max, 3, 'b0b') as string[];

    expect(keys).toEqual([
      formatOrderKey(5000, 999_999, 'b0br'),
      formatOrderKey(5001, 0, 'b0br'),
      formatOrderKey(5001, 1, 'b0br'),
    ]);
    expect([max, ...keys].sort()).toEqual([max, ...keys]);
  });

  it('starts in the next millisecond at a max whose counter is the last', () => {
    expect(keysAfter(formatOrderKey(5000, 999_999, 'z'), 1, 'a')).toEqual([
      formatOrderKey(5001, 0, 'ar'),
    ]);
  });

  it('passes a max of another format by the millisecond after its numeric prefix', () => {
    const max = '001764460800123.000042.AB12';

    const keys = keysAfter(max, 2, 'b0b') as string[];

    expect(keys).toEqual([
      formatOrderKey(1764460800124, 0, 'b0br'),
      formatOrderKey(1764460800124, 1, 'b0br'),
    ]);
    expect(keys[0] > max).toBe(true);
  });

  it.each([
    ['no numeric prefix', 'zzz'],
    ['too short a prefix', '17644608001.000000.a'],
    ['an empty key', ''],
  ])('gives null for a max with %s: the records keep their keys', (_case, max) => {
    expect(keysAfter(max, 1, 'b0b')).toBeNull();
  });

  it('gives no keys for no records', () => {
    expect(keysAfter(formatOrderKey(1, 0, 'a'), 0, 'b')).toEqual([]);
  });
});

describe('derived keys (keysAfter) and the clock', () => {
  it('are named apart from every key the clock issues: its id and DERIVED_MARKER', () => {
    const sut = new OrderKeyGenerator('abcd0123', () => 5000);
    const issued = [sut.next(), sut.next(), sut.next()].map((next) => next.key);

    const derived = keysAfter(formatOrderKey(4999, 999_998, 'other'), 3, 'abcd0123') as string[];

    expect(DERIVED_MARKER).toBe('r');
    expect(derived.map((key) => parseOrderKey(key)?.instanceId)).toEqual([
      'abcd0123r',
      'abcd0123r',
      'abcd0123r',
    ]);
    // Same times and counters as the clock's, and still none of its keys.
    expect(derived.slice(1).map((key) => key.slice(0, 22))).toEqual(
      issued.slice(0, 2).map((key) => key.slice(0, 22)),
    );
    expect(derived.filter((key) => issued.includes(key))).toEqual([]);
  });

  it('parse as order keys (the journal, cursors) for an eight-digit hex id', () => {
    const [key] = keysAfter(formatOrderKey(1, 0, 'x'), 1, 'deadbeef') as string[];

    expect(parseOrderKey(key)).toEqual({ ms: 1, counter: 1, instanceId: 'deadbeefr' });
  });
});
