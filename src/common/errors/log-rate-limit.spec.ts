import { LogRateLimit } from './log-rate-limit.js';

describe(LogRateLimit.name, () => {
  let now: number;
  const limit = (globalLines = 10) => new LogRateLimit(1000, globalLines, () => now);

  beforeEach(() => {
    now = 5000;
  });

  it('writes the first line of a source, then holds the rest back until its window ends', () => {
    const sut = limit();

    expect(sut.take('a')).toEqual({ write: true, suppressed: 0 });
    expect(sut.take('a')).toEqual({ write: false, suppressed: 1 });
    now += 999;
    expect(sut.take('a')).toEqual({ write: false, suppressed: 2 });
    now += 1;
    // The next line says how many were held back, and the count starts again.
    expect(sut.take('a')).toEqual({ write: true, suppressed: 2 });
    expect(sut.take('a')).toEqual({ write: false, suppressed: 1 });
  });

  it('keeps one window per source', () => {
    const sut = limit();

    expect(sut.take('a').write).toBe(true);
    expect(sut.take('b').write).toBe(true);
    expect(sut.take('a').write).toBe(false);
    expect(sut.take('b').write).toBe(false);
  });

  it('writes at most globalLines per window over all sources, counting the rest', () => {
    const sut = limit(2);

    expect(sut.take('a').write).toBe(true);
    expect(sut.take('b').write).toBe(true);
    expect(sut.take('c')).toEqual({ write: false, suppressed: 1 });
    expect(sut.take('c')).toEqual({ write: false, suppressed: 2 });
    now += 1000;
    // A new window: the held-back source is written, with its count.
    expect(sut.take('c')).toEqual({ write: true, suppressed: 2 });
  });
});
