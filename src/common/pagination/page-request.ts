import { boundedPage } from './byte-bounded-page.js';

/**
 * Which slice of an ordered list a page is, as Relay's arguments say: of the items strictly
 * between `after` and `before` (either may be absent), the first `count` (`first`, forward)
 * or the last `count` (`last`, backward). Items come back in the list's order either way.
 */
export interface PageRequest<Key> {
  direction: 'forward' | 'backward';
  count: number;
  after?: Key;
  before?: Key;
}

/** A page of a list, with both of Relay's flags. */
export interface Page<T> {
  items: T[];
  /** Items follow the page in the list. */
  hasNextPage: boolean;
  /** Items precede the page in the list. */
  hasPreviousPage: boolean;
}

/**
 * The page `request` asks of `list` (sorted by `keyOf`, in memory), up to `maxBytes` as
 * `sizeOf` estimates them and always one item (see itemsWithin): a backward page keeps the
 * newest items that fit. Relay's flags: the paging direction's from the slice itself; the other
 * direction's from whether anything lies beyond the cursor the page starts from.
 */
export function pageOfList<T, Key extends string | number>(
  list: readonly T[],
  request: PageRequest<Key>,
  keyOf: (item: T) => Key,
  maxBytes: number,
  sizeOf: (item: T) => number,
): Page<T> {
  const { after, before } = request;
  let start = after === undefined ? 0 : list.findIndex((item) => keyOf(item) > after);
  if (start < 0) start = list.length;
  let end = before === undefined ? list.length : list.findIndex((item) => keyOf(item) >= before);
  if (end < 0) end = list.length;
  const slice = list.slice(start, Math.max(start, end));
  if (request.direction === 'forward') {
    const page = boundedPage(slice.slice(0, request.count + 1), request.count, maxBytes, sizeOf);
    return { items: page.items, hasNextPage: page.more, hasPreviousPage: start > 0 };
  }
  const newestFirst = slice.slice(-(request.count + 1)).reverse();
  const page = boundedPage(newestFirst, request.count, maxBytes, sizeOf);
  return {
    items: page.items.reverse(),
    hasNextPage: end < list.length,
    hasPreviousPage: page.more,
  };
}
