import { DEFAULT_PAGE_SIZE, pageRequestOf } from './page.args.js';
import { pageOfList, type PageRequest } from './page-request.js';

describe(pageOfList.name, () => {
  // Items 1..10, each its own key and one byte.
  const list = Array.from({ length: 10 }, (_, n) => n + 1);
  const page = (request: PageRequest<number>, maxBytes = 1000) =>
    pageOfList(
      list,
      request,
      (item) => item,
      maxBytes,
      () => 1,
    );

  it('takes the first items from the start, and says more follow', () => {
    expect(page({ direction: 'forward', count: 3 })).toEqual({
      items: [1, 2, 3],
      hasNextPage: true,
      hasPreviousPage: false,
    });
    expect(page({ direction: 'forward', count: 10 })).toEqual({
      items: list,
      hasNextPage: false,
      hasPreviousPage: false,
    });
  });

  it('takes the last items from the end, in the list order, and says more precede', () => {
    expect(page({ direction: 'backward', count: 3 })).toEqual({
      items: [8, 9, 10],
      hasNextPage: false,
      hasPreviousPage: true,
    });
    expect(page({ direction: 'backward', count: 10 })).toEqual({
      items: list,
      hasNextPage: false,
      hasPreviousPage: false,
    });
  });

  it('pages strictly after `after` and strictly before `before`', () => {
    expect(page({ direction: 'forward', count: 3, after: 4 })).toEqual({
      items: [5, 6, 7],
      hasNextPage: true,
      hasPreviousPage: true,
    });
    expect(page({ direction: 'backward', count: 3, before: 4 })).toEqual({
      items: [1, 2, 3],
      hasNextPage: true,
      hasPreviousPage: false,
    });
    expect(page({ direction: 'forward', count: 10, after: 2, before: 6 })).toEqual({
      items: [3, 4, 5],
      hasNextPage: false,
      hasPreviousPage: true,
    });
    expect(page({ direction: 'backward', count: 2, after: 2, before: 6 })).toEqual({
      items: [4, 5],
      hasNextPage: true,
      hasPreviousPage: true,
    });
  });

  it('tells what lies beyond the cursor it starts from, even with nothing in between', () => {
    expect(page({ direction: 'forward', count: 3, after: 10 })).toEqual({
      items: [],
      hasNextPage: false,
      hasPreviousPage: true,
    });
    expect(page({ direction: 'forward', count: 3, after: 0 }).hasPreviousPage).toBe(false);
    expect(page({ direction: 'backward', count: 3, before: 1 })).toEqual({
      items: [],
      hasNextPage: true,
      hasPreviousPage: false,
    });
    expect(page({ direction: 'backward', count: 3, before: 11 }).hasNextPage).toBe(false);
    // A cursor between keys (an item since removed, or never there) works the same way.
    expect(page({ direction: 'forward', count: 2, after: 4.5 }).items).toEqual([5, 6]);
    expect(page({ direction: 'backward', count: 2, before: 4.5 }).items).toEqual([3, 4]);
  });

  it('ends a page early at maxBytes, always one item, from the end it pages from', () => {
    expect(page({ direction: 'forward', count: 5 }, 2)).toEqual({
      items: [1, 2],
      hasNextPage: true,
      hasPreviousPage: false,
    });
    expect(page({ direction: 'backward', count: 5 }, 2)).toEqual({
      items: [9, 10],
      hasNextPage: false,
      hasPreviousPage: true,
    });
    expect(page({ direction: 'backward', count: 5 }, 0).items).toEqual([10]);
  });
});

describe(pageRequestOf.name, () => {
  const decode = (cursor: string, argument: 'after' | 'before') => `${argument}:${cursor}`;

  it('pages forward by DEFAULT_PAGE_SIZE when no count is given', () => {
    expect(pageRequestOf({}, decode)).toEqual({ direction: 'forward', count: DEFAULT_PAGE_SIZE });
    expect(pageRequestOf({ first: null, last: null }, decode)).toEqual({
      direction: 'forward',
      count: DEFAULT_PAGE_SIZE,
    });
  });

  it('pages forward by first, backward by last, each cursor decoded as what it is', () => {
    expect(pageRequestOf({ first: 5, after: 'a' }, decode)).toEqual({
      direction: 'forward',
      count: 5,
      after: 'after:a',
    });
    expect(pageRequestOf({ last: 7, before: 'b', after: 'a' }, decode)).toEqual({
      direction: 'backward',
      count: 7,
      after: 'after:a',
      before: 'before:b',
    });
  });

  it('refuses first and last together with BAD_USER_INPUT naming last', () => {
    expect(() => pageRequestOf({ first: 1, last: 1 }, decode)).toThrow(
      expect.objectContaining({
        message: 'last: cannot be given with first: page one way at a time',
      }),
    );
  });
});
