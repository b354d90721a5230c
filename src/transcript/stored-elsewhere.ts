import { Injectable } from '@nestjs/common';
import { SessionQueries } from '../database/session-queries.js';
import { type MessageRecord } from '../message/message-record.js';
import { type RefusedRecord } from '../message/outcomes.js';

/** Why a record of a write-back is set aside when its id is another session's message. */
export const ID_STORED_ELSEWHERE =
  "its id was stored meanwhile as another session's message, so it was not stored";

/**
 * Why this exists: a write-back (or replay) skips a record whose id is stored already, and takes
 * it for a copy of itself stored before (a crash between a commit and letting go of the
 * journal). But an import carries ids of its own choosing, and two imports held while the
 * database was away may carry the same ids into two sessions: the one written back second finds
 * them stored as the other session's messages. Those records were never stored; let go of as if
 * they were, they would vanish after being answered QUEUED. They are refused instead, and set
 * aside with their reason, for an operator to see, re-drive or drop.
 */
@Injectable()
export class StoredElsewhere {
  constructor(private readonly queries: SessionQueries) {}

  /**
   * Of `skipped` (records a write of `sessionId` skipped as stored), those whose id is stored as
   * another session's message, refused; undefined when the database cannot tell now.
   */
  async refusals(
    sessionId: string,
    skipped: readonly MessageRecord[],
  ): Promise<RefusedRecord[] | undefined> {
    if (skipped.length === 0) return [];
    let stored: MessageRecord[];
    try {
      stored = await this.queries.findByIds(skipped.map((record) => record.id));
    } catch {
      return undefined;
    }
    const elsewhere = new Set(
      stored.filter((record) => record.sessionId !== sessionId).map((record) => record.id),
    );
    return skipped
      .filter((record) => elsewhere.has(record.id))
      .map((record) => ({ record, reason: ID_STORED_ELSEWHERE }));
  }
}
