/**
 * How many of `sizes` (the sizes of the items after a cursor, in order: up to `first + 1`) one
 * page holds: up to `first`, and no more once they reach `maxBytes`, however few that is, but
 * always one. A page of large messages is shorter, not larger: Relay clients read
 * `hasNextPage` and ask for the rest, and no response grows past the bound by more than one
 * item.
 */
export function itemsWithin(sizes: readonly number[], first: number, maxBytes: number): number {
  let bytes = 0;
  let count = 0;
  while (count < first && count < sizes.length && (count === 0 || bytes < maxBytes)) {
    bytes += sizes[count];
    count += 1;
  }
  return count;
}

/** A page's items, and whether more follow it. */
export interface BoundedPage<T> {
  items: T[];
  more: boolean;
}

/** The page `itemsWithin` makes of `rows` (up to `first + 1`, already in memory). */
export function boundedPage<T>(
  rows: readonly T[],
  first: number,
  maxBytes: number,
  sizeOf: (row: T) => number,
): BoundedPage<T> {
  const count = itemsWithin(
    rows.slice(0, first).map((row) => sizeOf(row)),
    first,
    maxBytes,
  );
  return { items: rows.slice(0, count), more: rows.length > count };
}
