import { type RefusedRecord } from '../message/outcomes.js';
import { type JournalEvents } from './journal-events.js';
import { type JournalIndex } from './journal-index.js';
import { type RecordLocation } from './journal-ledger.js';
import { type SegmentCache } from './journal-reader.js';
import { type JournalWriter } from './journal-writer.js';
import { diskEntryOf, type JournaledRecord } from './journaled-record.js';
import { type SetAsideLog } from './set-aside-log.js';

/** What OwedRecords.forget let go of. */
export interface Forgotten {
  count: number;
  /** When the newest of them was accepted; absent when there were none. */
  newestAcceptedAt?: number;
}

/**
 * What the journal owes, and letting go of it. Every other part of the journal (write-back,
 * scrub) lets go through here, so that one place deletes a segment left owing nothing, drops it
 * from the read cache and tells the outside. Knows nothing of Nest, locks or logs.
 */
export class OwedRecords {
  constructor(
    private readonly index: JournalIndex,
    private readonly writer: JournalWriter,
    private readonly setAsideLog: SetAsideLog,
    // Whole segments kept in memory for reading back: a deleted segment leaves it.
    private readonly cache: SegmentCache,
    private readonly events: Pick<JournalEvents, 'setAside' | 'segmentsRemoved'>,
  ) {}

  /**
   * These journaled records left memory: from now on the drain reads them back from disk. A
   * record the disk holds a copy of already (another instance's, adopted) is owed once.
   */
  async release(records: readonly JournaledRecord[]): Promise<void> {
    const copies = this.index.addJournalOnly(records.map(diskEntryOf));
    await this.resolveEntries(copies);
  }

  /** These journaled records are stored (or set aside): the journal owes them no more. */
  resolve(records: readonly JournaledRecord[]): Promise<void> {
    return this.resolveEntries(
      records.map(({ record, location }) => ({
        id: record.id,
        sessionId: record.sessionId,
        location,
      })),
    );
  }

  /**
   * Keeps records the database refused in the set-aside log (synced) with their reasons, then
   * lets go of their journaled copies. Rejects when the log cannot be written: they stay owed.
   */
  async setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
    if (refused.length === 0) return;
    const entries = refused.map(({ record, reason, location }) => ({
      at: Date.now(),
      reason: `refused by the database: ${reason}`,
      source: location?.segment ?? 'memory',
      ...(location ? { offset: location.offset } : {}),
      sessionId: record.sessionId,
      messageId: record.id,
      record,
    }));
    await this.setAsideLog.append(entries);
    this.events.setAside(entries, 'refused');
    await this.resolve(
      refused.flatMap(({ record, location }) => (location ? [{ record, location }] : [])),
    );
  }

  /**
   * Lets go of the session's journal-only records accepted at or before `acceptedUpTo` (all of
   * them by default): the session was deleted. Their segments go once nothing else in them is
   * owed. Returns how many there were, and when the newest of them was accepted (for the log
   * of a write-back that drops them).
   */
  async forget(sessionId: string, acceptedUpTo = Number.POSITIVE_INFINITY): Promise<Forgotten> {
    const entries = this.index
      .journalOnlyOf(sessionId, Number.MAX_SAFE_INTEGER)
      .filter((entry) => entry.acceptedAt <= acceptedUpTo);
    await this.resolveEntries(entries);
    // Not Math.max(...): a session's backlog may hold more records than a call takes arguments.
    const newest = entries.reduce<number | undefined>(
      (latest, { acceptedAt }) =>
        latest === undefined || acceptedAt > latest ? acceptedAt : latest,
      undefined,
    );
    return { count: entries.length, ...(newest !== undefined ? { newestAcceptedAt: newest } : {}) };
  }

  /**
   * The journal owes these entries no more: a segment left owing nothing is deleted (by the
   * writer, in its turn), leaves the read cache, and is reported.
   */
  async resolveEntries(
    entries: readonly { id: string; sessionId: string; location: RecordLocation }[],
  ): Promise<void> {
    const emptied = this.index.resolve(entries);
    if (emptied.length === 0) return;
    const removed = await this.writer.release(emptied);
    for (const name of removed) this.cache.delete(name);
    await this.events.segmentsRemoved(removed);
  }
}
