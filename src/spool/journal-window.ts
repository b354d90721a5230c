import { type KeyWindow } from '../message/held-messages.js';
import { type DiskEntry } from './journal-only-list.js';

/** The journal-only entries a page may list, and what the selection left out. */
export interface WindowSelection {
  /** Oldest first. */
  entries: DiskEntry[];
  /** The key of the first entry of the window (from its cursor) left out, if any. */
  horizon?: string;
  beyondCursor: boolean;
}

/**
 * Of a session's journal-only entries (sorted by order key), those of `window` nearest its
 * cursor: at most `window.count`, and at most `maxBytes` of journal lines, always one. Fewer
 * cannot be listed (a page shows no more), and reading more would leave a page unbounded.
 */
export function selectWindow(
  sorted: readonly DiskEntry[],
  window: KeyWindow,
  maxBytes: number,
): WindowSelection {
  const { after, before } = window;
  const inside = sorted.filter(
    ({ orderKey }) =>
      (after === undefined || orderKey > after) && (before === undefined || orderKey < before),
  );
  const forward = window.direction === 'forward';
  const beyondCursor = sorted.some(({ orderKey }) =>
    forward ? after !== undefined && orderKey <= after : before !== undefined && orderKey >= before,
  );
  const nearestFirst = forward ? inside : [...inside].reverse();
  const entries: DiskEntry[] = [];
  let bytes = 0;
  for (const entry of nearestFirst) {
    const full =
      entries.length === window.count ||
      (entries.length > 0 && bytes + entry.location.length > maxBytes);
    if (full) return { entries: ordered(entries, forward), horizon: entry.orderKey, beyondCursor };
    entries.push(entry);
    bytes += entry.location.length;
  }
  return { entries: ordered(entries, forward), beyondCursor };
}

function ordered(entries: DiskEntry[], forward: boolean): DiskEntry[] {
  return forward ? entries : entries.reverse();
}
