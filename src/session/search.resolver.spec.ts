import { encodeCursor } from '../common/pagination/cursor.js';
import { MAX_SEARCH_DEPTH, searchOffsetOf } from './search.resolver.js';

describe('searchOffsetOf', () => {
  it('reads back the place a search cursor names', () => {
    expect(searchOffsetOf(encodeCursor('match:0'))).toBe(0);
    expect(searchOffsetOf(encodeCursor(`match:${MAX_SEARCH_DEPTH - 2}`))).toBe(
      MAX_SEARCH_DEPTH - 2,
    );
  });

  it.each([
    encodeCursor(`match:${MAX_SEARCH_DEPTH - 1}`),
    encodeCursor('match:123456'),
    encodeCursor('match:-1'),
    encodeCursor('match:1.5'),
    encodeCursor('match:'),
    encodeCursor('0017962216933.000000.37b1933b'),
    'not a cursor',
  ])('refuses %s as no cursor of a search', (cursor) => {
    expect(() => searchOffsetOf(cursor)).toThrow(/^after: is not a cursor/);
  });
});
