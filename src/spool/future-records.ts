import { type MessageRecord } from '../message/message-record.js';

/** Why adoption refuses a record; undefined for one it takes. */
export type AdoptionCheck = (record: MessageRecord) => string | undefined;

/**
 * Refuses a journaled record accepted more than `maxAheadMs` after this clock's now: a clock
 * that was far ahead when it was accepted (or a damaged disk's valid-looking line). Taken in,
 * it would move this instance's clock (which never goes back) years on for every later message,
 * and a deletion stamped before would not drop it. Set aside with its record, nothing is lost:
 * an operator can append it again. Records up to `maxAheadMs` ahead (a run whose clock was
 * somewhat fast) are replayed, and later keys sort after them.
 */
export function refuseFutureRecords(
  maxAheadMs: number,
  now: () => number = Date.now,
): AdoptionCheck {
  return (record) => {
    const current = now();
    if (record.acceptedAt - current <= maxAheadMs) return undefined;
    return (
      `accepted at ${new Date(record.acceptedAt).toISOString()}, more than ` +
      `JOURNAL_MAX_CLOCK_AHEAD_MS (${maxAheadMs} ms) after this clock's ${new Date(current).toISOString()}`
    );
  };
}
