import { type MessageRecord } from './message-record.js';
import { type SessionRecord } from './session-record.js';

// The write path tells readers what happened through these events, so that the read side (the
// session cache) never has to import the write side, nor the write side know who listens.

/**
 * `messages` of a session were committed by this instance, leaving it at `revision`.
 * The stable event for stored messages: a host listens with
 * `@OnEvent(MESSAGES_STORED_EVENT)` (the name `'messages.stored'`) and is handed a
 * `MessagesStored` (sessionId, messages: MessageRecord[], revision).
 */
export class MessagesStored {
  static readonly event = 'messages.stored';

  constructor(
    readonly sessionId: string,
    /** In acceptance order; replays only list the ones this write inserted. */
    readonly messages: MessageRecord[],
    readonly revision: number,
  ) {}
}

/** The name MessagesStored is emitted under: stable, for hosts to listen to. */
export const MESSAGES_STORED_EVENT = MessagesStored.event;

/**
 * A stored message of a session was edited or redacted by this instance: `record` is it as
 * it now reads, its `changeSeq` the commit number of this change, `revision` the session's.
 */
export class MessageChanged {
  static readonly event = 'message.changed';

  constructor(
    readonly record: MessageRecord,
    readonly revision: number,
  ) {}
}

/** A write of the session failed: anything read while it was under way may not be true. */
export class WriteFailed {
  static readonly event = 'messages.write-failed';

  constructor(readonly sessionId: string) {}
}

/** A session's title or metadata changed (on this instance): it now reads `session`. */
export class SessionChanged {
  static readonly event = 'session.changed';

  constructor(readonly session: SessionRecord) {}
}

/**
 * A session was deleted (on this instance, or on another one that shares the database): what
 * is held of it here goes, and its subscribers are told.
 */
export class SessionDeleted {
  static readonly event = 'session.deleted';

  constructor(readonly sessionId: string) {}
}

/**
 * Someone asked for the database to be tried now (SpoolService.retryNow): the write path runs
 * its background retry at once (probe while the database fails, then write back what is
 * held and journal what memory alone holds) instead of waiting for the next interval. The
 * journal emits it, the write path handles it: neither imports the other.
 */
export class SpoolRetryRequested {
  static readonly event = 'spool.retry-requested';
}

/** The name SpoolRetryRequested is emitted under: stable, for hosts to listen to. */
export const SPOOL_RETRY_REQUESTED_EVENT = SpoolRetryRequested.event;
