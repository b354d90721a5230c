import { type MessageRecord } from '../message/message-record.js';

/** Messages of one session to store, in order. */
export interface SessionWrite {
  sessionId: string;
  records: MessageRecord[];
  /**
   * Skip records whose id or clientMessageId is already stored (replays of queued or spooled
   * messages, which may have been stored before a crash).
   */
  skipExisting?: boolean;
}

/** What one write stored: its new records (replays skip stored ones) and the session's revision after it. */
export interface WriteResult {
  stored: MessageRecord[];
  /** The session's revision once the transaction committed; null when nothing was stored. */
  revision: number | null;
}

/**
 * The database seam of the write path: every write of messages goes through here, so tests
 * can put a store that fails and heals in its place.
 */
export abstract class MessageStore {
  /** Stores every write in one transaction, all of them or none; one result per write. */
  abstract write(writes: SessionWrite[]): Promise<WriteResult[]>;

  /**
   * Starts a write transaction and rolls it back: fails when the database cannot take a
   * write right now (unreachable, locked by another process, read-only).
   */
  abstract probeWrite(): Promise<void>;

  /** Stored messages of a session with any of these client ids. */
  abstract findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]>;
}
