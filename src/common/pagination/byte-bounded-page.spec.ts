import { boundedPage, itemsWithin } from './byte-bounded-page.js';

describe('itemsWithin', () => {
  it('takes up to first items while they are under the bound', () => {
    expect(itemsWithin([1, 1, 1, 1], 3, 100)).toBe(3);
    expect(itemsWithin([1, 1], 3, 100)).toBe(2);
    expect(itemsWithin([], 3, 100)).toBe(0);
  });

  it('stops once the items taken reach the bound: the last one may pass it', () => {
    // 40 + 40 = 80 < 100: a third is taken, and ends past the bound.
    expect(itemsWithin([40, 40, 40, 40], 10, 100)).toBe(3);
    // 50 + 50 = 100 reaches it: no third.
    expect(itemsWithin([50, 50, 50], 10, 100)).toBe(2);
    expect(itemsWithin([50, 49, 50], 10, 100)).toBe(3);
  });

  it('always takes one, however large', () => {
    expect(itemsWithin([500, 1], 10, 100)).toBe(1);
    expect(itemsWithin([100, 1], 10, 100)).toBe(1);
    expect(itemsWithin([99, 1], 10, 100)).toBe(2);
  });

  it('takes none when asked for none', () => {
    expect(itemsWithin([1, 1], 0, 100)).toBe(0);
  });
});

describe('boundedPage', () => {
  const size = (row: { bytes: number }) => row.bytes;
  const rows = (...sizes: number[]) => sizes.map((bytes, index) => ({ index, bytes }));

  it('holds first of first + 1 rows, and says more follow', () => {
    expect(boundedPage(rows(1, 1, 1), 2, 100, size)).toEqual({
      items: rows(1, 1),
      more: true,
    });
  });

  it('holds every row when no more than first were found', () => {
    expect(boundedPage(rows(1, 1), 2, 100, size)).toEqual({ items: rows(1, 1), more: false });
    expect(boundedPage([], 2, 100, size)).toEqual({ items: [], more: false });
  });

  it('ends early at the bound, and says more follow', () => {
    expect(boundedPage(rows(60, 60, 60), 5, 100, size)).toEqual({
      items: rows(60, 60),
      more: true,
    });
  });

  it('never sizes the extra row: it is only a marker that more follow', () => {
    const sized: number[] = [];
    boundedPage(rows(1, 1, 1), 2, 100, (row) => {
      sized.push(row.index);
      return row.bytes;
    });
    expect(sized).toEqual([0, 1]);
  });
});
