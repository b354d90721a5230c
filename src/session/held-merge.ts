import { type Page, type PageRequest } from '../common/pagination/page-request.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { type HeldMessage, type UnreadableMessage } from '../message/held-messages.js';

/** A message of a page, stored or still held by this instance. */
export interface ListedMessage {
  record: MessageRecord;
  status: AppendStatus;
}

/**
 * What the held messages read back from the journal leave out of a page: past the
 * `horizon` (the first not read back, the page's byte bound reached), and whether some lie
 * beyond the page's cursor.
 */
export interface JournalBounds {
  horizon?: string;
  beyondCursor: boolean;
  /** The one nearest the cursor that could not be read back (its file cannot be read now). */
  unreadable?: UnreadableMessage;
}

/**
 * A page (or a session's first message) would need a message the journal holds in a file that
 * cannot be read now: answered without it, the page would show a gap that paging never fills,
 * while totalCount counts it. Nothing is lost: it is listed once the file reads again.
 */
export function journalUnavailable(damaged = false): ScribeException {
  const why = damaged
    ? 'its journal line is damaged: the next write-back sets it aside, and it is counted no more'
    : 'in a journal file that cannot be read now (see spoolStatus.blocked)';
  return new ScribeException(
    ScribeErrorCode.JournalUnavailable,
    `A message of this page is accepted (QUEUED) but ${why}; the page is not answered rather than answered with a gap. Retry later, or read a page that does not reach it.`,
  );
}

/**
 * A page of what is stored, with this instance's held messages in their accepted places
 * (read your own writes). A held message belongs to this page when its key lies inside the
 * page's window and, while the database holds more beyond the page's far end, before that end:
 * past it, it belongs to a later page. Merged past `count`, the far end is trimmed and the page
 * says more follow. A held message the page holds already (stored while this ran) counts once.
 * Nothing past the journal's horizon is listed: the page ends before a message it cannot show
 * rather than show a gap, and says more follow. A page that would list a message the journal
 * could not read back is refused (journalUnavailable); one that ends before it is answered.
 */
export function withHeld(
  page: Page<MessageRecord>,
  request: PageRequest<string>,
  held: readonly HeldMessage[],
  journal: JournalBounds = { beyondCursor: false },
): Page<ListedMessage> {
  const { unreadable } = journal;
  if (unreadable === undefined) return bounded(page, request, held, journal);
  // Placed as if it had been read, so that the page is cut where it would be with it (and a
  // copy the database holds already, stored meanwhile, counts once and is no gap).
  const stand = { record: unreadable as MessageRecord, status: AppendStatus.QUEUED } as const;
  const listed = bounded(page, request, [...held, stand], journal);
  if (listed.items.some((item) => item.record === stand.record)) {
    throw journalUnavailable(unreadable.damaged);
  }
  return listed;
}

function bounded(
  page: Page<MessageRecord>,
  request: PageRequest<string>,
  held: readonly HeldMessage[],
  journal: JournalBounds,
): Page<ListedMessage> {
  const forward = request.direction === 'forward';
  const merged = merge(page, request, held, journal.beyondCursor);
  const { horizon } = journal;
  if (horizon === undefined) return merged;
  const before = (item: ListedMessage) =>
    forward ? item.record.orderKey < horizon : item.record.orderKey > horizon;
  // A message lies at the horizon: the page always has more in its direction.
  return forward
    ? { ...merged, items: merged.items.filter(before), hasNextPage: true }
    : { ...merged, items: merged.items.filter(before), hasPreviousPage: true };
}

function merge(
  page: Page<MessageRecord>,
  request: PageRequest<string>,
  held: readonly HeldMessage[],
  journalBeyondCursor: boolean,
): Page<ListedMessage> {
  const stored = page.items.map((record) => ({ record, status: AppendStatus.PERSISTED }));
  const ids = new Set(page.items.map((record) => record.id));
  const forward = request.direction === 'forward';
  // One message may be both in memory and read back from the journal (evicted meanwhile).
  const unstored = held.filter((message) => {
    if (ids.has(message.record.id)) return false;
    ids.add(message.record.id);
    return true;
  });
  const inWindow = unstored.filter(({ record }) => within(record.orderKey, request));
  const beyondCursor =
    journalBeyondCursor ||
    unstored.some(({ record }) =>
      forward
        ? request.after !== undefined && record.orderKey <= request.after
        : request.before !== undefined && record.orderKey >= request.before,
    );
  const flags = forward
    ? { hasNextPage: page.hasNextPage, hasPreviousPage: page.hasPreviousPage || beyondCursor }
    : { hasNextPage: page.hasNextPage || beyondCursor, hasPreviousPage: page.hasPreviousPage };
  if (inWindow.length === 0) return { items: stored, ...flags };
  const more = forward ? page.hasNextPage : page.hasPreviousPage;
  const farEnd = page.items.length === 0 ? undefined : forward ? page.items.at(-1) : page.items[0];
  const belongs = inWindow.filter(
    ({ record }) =>
      !more ||
      farEnd === undefined ||
      (forward ? record.orderKey < farEnd.orderKey : record.orderKey > farEnd.orderKey),
  );
  const merged = [...stored, ...belongs].sort((left, right) =>
    left.record.orderKey < right.record.orderKey ? -1 : 1,
  );
  if (merged.length <= request.count) return { items: merged, ...flags };
  return forward
    ? { items: merged.slice(0, request.count), ...flags, hasNextPage: true }
    : { items: merged.slice(-request.count), ...flags, hasPreviousPage: true };
}

function within(key: string, request: PageRequest<string>): boolean {
  return (
    (request.after === undefined || key > request.after) &&
    (request.before === undefined || key < request.before)
  );
}
