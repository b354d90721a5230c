import { type AppendStatus } from './append-status.js';
import { type MessageRecord } from './message-record.js';

/** An accepted message this instance holds until the database takes it. */
export interface PendingMessage {
  record: MessageRecord;
  status: AppendStatus.QUEUED | AppendStatus.BUFFERED;
}

/**
 * What the write path holds for the database, as the read side may see it: so that a client
 * that re-reads after an append answered QUEUED or BUFFERED finds its message in its place.
 * Declared here because the read side cannot import the write side.
 */
export abstract class PendingMessages {
  /** The session's pending messages, oldest first (a copy). */
  abstract of(sessionId: string): PendingMessage[];
}
