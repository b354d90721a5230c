import { type MessageRecord } from '../message/message-record.js';

/** Messages of one session to store, in acceptance order. */
export interface SessionWrite {
  sessionId: string;
  records: MessageRecord[];
  /**
   * 'stored': the records are an append answered by this write, and must sort after every
   * message the session holds when it commits, whatever the clock that timed them said: the
   * write gives them keys after the stored ones when theirs are not (see placeAfterStored).
   * Absent for write-back and replays, which keep their keys: they were answered (QUEUED or
   * BUFFERED) when accepted, and what was stored since may have been accepted after them.
   */
  after?: 'stored';
}

/** What one write did. */
export interface WrittenSession {
  /** Records this write inserted, in order. */
  inserted: MessageRecord[];
  /**
   * Records that were stored already (same id, or same client id in the session) and were
   * skipped: replays of what a crash left behind, or a retry another instance stored first.
   */
  skipped: MessageRecord[];
  /** The session's revision once the transaction committed; null when nothing was inserted. */
  revision: number | null;
  /** The commit number of each inserted record, in order (see countMessages). */
  seqs?: number[];
  /**
   * The order key each inserted record was stored with, in order, when the write gave its
   * records keys after the stored ones (see SessionWrite.after); absent when it kept theirs.
   */
  orderKeys?: string[];
}

/**
 * Marks each inserted record with its commit number, and the order key it was stored with,
 * once the write committed: the record objects are the ones the answer, the session cache and
 * the events carry, which must tell what a read of the database tells. Before the commit they
 * keep the keys they were accepted with, which is what a failed write journals.
 */
export function numberInserted(results: readonly WrittenSession[]): void {
  for (const result of results) {
    result.inserted.forEach((record, index) => {
      const seq = result.seqs?.[index];
      if (seq !== undefined) record.commitSeq = seq;
      const key = result.orderKeys?.[index];
      if (key !== undefined) record.orderKey = key;
    });
  }
}

/**
 * The database seam of the write path. Implementations own their write connection: a commit
 * that fails leaves it closed and reopened, never half in a transaction, so that a write that
 * resolves was committed, and one that rejects was not (or, when the connection broke during
 * COMMIT, may have been: replays skip what is stored, so trying again is always safe).
 */
export abstract class MessageStore {
  /**
   * How many `write` (or `heartbeat`) calls may run at once, each in its own transaction on a
   * connection of its own. One unless the store says otherwise.
   */
  get concurrentWrites(): number {
    return 1;
  }

  /**
   * Stores every write in one transaction, all of them or none, skipping records stored
   * already; one result per write. Rejects with the driver's error (see classifyDatabaseError).
   */
  abstract write(writes: SessionWrite[]): Promise<WrittenSession[]>;

  /**
   * Commits a write of this instance's heartbeat row on the write connection, and checks that
   * the database is still the one opened at start: rejects when a write cannot commit now.
   */
  abstract heartbeat(): Promise<void>;
}
