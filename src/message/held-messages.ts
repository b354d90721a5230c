import { type AppendStatus } from './append-status.js';
import { type MessageRecord } from './message-record.js';

/** An accepted message this instance holds until the database takes it. */
export interface HeldMessage {
  record: MessageRecord;
  status: AppendStatus.QUEUED | AppendStatus.BUFFERED;
}

/**
 * The slice of a session's order keys a page asks for (the shape of a page request): of the
 * keys strictly between `after` and `before`, the first `count` or the last `count`.
 */
export interface KeyWindow {
  direction: 'forward' | 'backward';
  count: number;
  after?: string;
  before?: string;
}

/** A session's messages held in the journal only (left memory past MAX_PENDING_PER_SESSION). */
export interface JournalOnlyMessages {
  /** Those of the window nearest its cursor, read back (QUEUED), oldest first. */
  messages: HeldMessage[];
  /**
   * The key of the first of the window's (from its cursor) not read back, the page's count or
   * byte bound reached: a page must end before it, or it would show a gap.
   */
  horizon?: string;
  /** Some lie beyond the window's cursor (`after` forward, `before` backward). */
  beyondCursor: boolean;
  /**
   * Of those the window's selection holds, the one nearest its cursor not read back, its file
   * unreadable now (see BlockedFiles) or its line damaged: left out of `messages`, but counted
   * in `total`, so a page must not pretend it is not there.
   */
  unreadable?: UnreadableMessage;
  /** How many the journal holds for the session. */
  total: number;
}

/** A message the journal holds in a file that cannot be read now: where it stands. */
export interface UnreadableMessage {
  id: string;
  orderKey: string;
  /** Its line is damaged: the drain sets it aside, and it is counted no more (not owed). */
  damaged?: true;
}

/**
 * What the write path holds for the database, as the read side may see it: so that a client
 * that re-reads after an append answered QUEUED or BUFFERED finds its message in its place.
 * Declared here because the read side cannot import the write side.
 */
export abstract class HeldMessages {
  /** The session's backlog (its held messages in memory), oldest first (a copy). */
  abstract of(sessionId: string): HeldMessage[];

  /** Whether the journal alone holds some of the session's messages. */
  abstract inJournalOnly(sessionId: string): boolean;

  /** The session's journal-only messages a page of `window` may list, at most `maxBytes`. */
  abstract journalOnly(
    sessionId: string,
    window: KeyWindow,
    maxBytes: number,
  ): Promise<JournalOnlyMessages>;

  /**
   * Runs `read` while none of the session's held messages moves (into the journal only, or into
   * the database), so that what it counts as stored and what it finds held are one moment's.
   */
  abstract atOneMoment<T>(sessionId: string, read: () => Promise<T>): Promise<T>;
}

/**
 * Nothing held: what the read side sees when no write path is in the app (SessionModule
 * imported alone, as in a host's test), where no message can be held.
 */
class NothingHeld extends HeldMessages {
  of(): HeldMessage[] {
    return [];
  }

  inJournalOnly(): boolean {
    return false;
  }

  journalOnly(): Promise<JournalOnlyMessages> {
    return Promise.resolve({ messages: [], beyondCursor: false, total: 0 });
  }

  atOneMoment<T>(_sessionId: string, read: () => Promise<T>): Promise<T> {
    return read();
  }
}

export const NOTHING_HELD: HeldMessages = new NothingHeld();
