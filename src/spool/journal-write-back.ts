import { type Failpoints } from '../common/failpoints.js';
import { splitRefused, type RefusedRecord, type Unavailable } from '../message/outcomes.js';
import { type DrainReader } from './drain-reader.js';
import { type JournalEvents } from './journal-events.js';
import { type JournalIndex } from './journal-index.js';
import { type JournaledRecord } from './journaled-record.js';
import { type OwedRecords } from './owed-records.js';

/**
 * The drain's next step over a session's journal-only records: a batch read back from disk, oldest
 * first, to be stored and then settled (`waiting`: why the drain stops after it, null when
 * nothing waits); `done` when none is left; unavailable when the disk failed (all stay owed).
 */
export type NextBatch =
  | { kind: 'batch'; records: JournaledRecord[]; waiting: Error | null }
  | { kind: 'done' }
  | Unavailable;

/** A settled batch: `stored` let go of, `setAside` refused and kept in the set-aside log. */
export interface Settled {
  kind: 'settled';
  stored: number;
  setAside: number;
}

/**
 * The journal's side of write-back (replay): it offers a session's journal-only records in
 * batches, and settles each once the caller has stored it. It never stores anything itself:
 * the caller (DurableWriter) does, so that calls run one way. Knows nothing of Nest or logs.
 */
export class JournalWriteBack {
  constructor(
    private readonly index: JournalIndex,
    // Reads the drain's records back (over the journal's files, index and read cache), with the
    // blocked list of the segments (and the set-aside log) it cannot use now.
    private readonly reader: DrainReader,
    private readonly owed: OwedRecords,
    private readonly events: Pick<JournalEvents, 'replayed'>,
    private readonly failpoints: Failpoints,
  ) {}

  /**
   * The drain's next batch of the session's journal-only records, oldest first, at most `max`: read
   * back from disk, for the caller to store and then settle. Stops before the first record that
   * cannot be read now (its segment is unreadable, or it is a bad line the set-aside log cannot
   * take): it and all after it stay owed, in order, and `waiting` says why. Bad lines set aside
   * and scrubbed lines are let go of here; nothing else is until it is settled.
   */
  async nextBatch(sessionId: string, max: number): Promise<NextBatch> {
    const entries = this.index.journalOnlyOf(sessionId, max);
    if (entries.length === 0) return { kind: 'done' };
    try {
      const read = await this.reader.read(entries);
      await this.owed.resolveEntries([...read.setAside, ...read.scrubbed]);
      return { kind: 'batch', records: read.batch, waiting: read.waiting };
    } catch (error) {
      return { kind: 'unavailable', error };
    }
  }

  /**
   * A batch of nextBatch is stored (all but `refused`): the refused are set aside with their
   * reasons, the rest let go of. Unavailable when the set-aside log cannot be written: the whole
   * batch stays owed. A caller storing and settling in the same turn as a reader keeps that
   * reader from seeing a record owed and stored at once.
   */
  async settle(
    batch: readonly JournaledRecord[],
    refused: readonly RefusedRecord[],
  ): Promise<Settled | Unavailable> {
    // A crash test's kill lands here: stored in the database, still owed by the journal.
    this.failpoints.reach('spool.drain-committed');
    const split = splitRefused(batch, refused);
    try {
      await this.owed.setAside(split.refused);
    } catch (error) {
      return { kind: 'unavailable', error };
    }
    await this.owed.resolve(split.kept);
    this.events.replayed(split.kept.length);
    return { kind: 'settled', stored: split.kept.length, setAside: split.refused.length };
  }
}
