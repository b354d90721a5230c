import { type Failpoints } from '../common/failpoints.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { splitRefused, type RefusedRecord, type Unavailable } from '../message/outcomes.js';
import { type JournalOnlyMessages, type KeyWindow } from '../message/held-messages.js';
import { type JournalFiles } from './journal-files.js';
import { type JournalIndex } from './journal-index.js';
import { type DiskEntry } from './disk-only-list.js';
import { type RecordLocation } from './journal-ledger.js';
import { cacheableIn, type DrainReader } from './drain-reader.js';
import { type SegmentCache, readBack } from './journal-reader.js';
import { selectWindow } from './journal-window.js';
import { RecordUnreadableError } from './record-unreadable.error.js';
import { type JournalAppend, type JournalWriter } from './journal-writer.js';
import { type SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry } from './set-aside-entry.js';
import { scrubSegments } from './segment-scrub.js';

/**
 * The drain's next step over a session's disk-only records: a batch read back from disk, oldest
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

/** What Journal.forget let go of. */
export interface Forgotten {
  count: number;
  /** When the newest of them was accepted; absent when there were none. */
  newestAcceptedAt?: number;
}

/** A journaled record, with the place that proves it is on disk. */
export interface JournaledRecord {
  record: MessageRecord;
  location: RecordLocation;
}

/** What the journal tells the outside (logs, metrics) as it works. */
export interface JournalEvents {
  /** Entries were written to the set-aside log. */
  setAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void;
  /** `count` records read back from disk were stored. */
  replayed(count: number): void;
  /** Segments were deleted (their owner may be done with). */
  segmentsRemoved(names: readonly string[]): Promise<void>;
}

/**
 * The journal's operations over its parts: the writer appends, the index knows what is owed,
 * the set-aside log keeps what cannot be replayed. Knows nothing of Nest, locks or logs.
 */
export class Journal {
  private readonly cacheable: (segment: string) => boolean;

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    private readonly writer: JournalWriter,
    private readonly setAsideLog: SetAsideLog,
    private readonly events: JournalEvents,
    private readonly failpoints: Failpoints,
    // Whole segments kept in memory for reading back, shared with the reader.
    private readonly cache: SegmentCache,
    // Reads the drain's records back (over the same files, index and cache), with the blocked
    // list of the segments (and the set-aside log) it cannot use now.
    private readonly reader: DrainReader,
  ) {
    this.cacheable = cacheableIn(index);
  }

  append(records: MessageRecord[]): Promise<JournalAppend> {
    return this.writer.append(records);
  }

  /**
   * These journaled records left memory: from now on the drain reads them back from disk. A
   * record the disk holds a copy of already (another instance's, adopted) is owed once.
   */
  async release(records: readonly JournaledRecord[]): Promise<void> {
    const copies = this.index.addDiskOnly(records.map(diskEntryOf));
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
   * The drain's next batch of the session's disk-only records, oldest first, at most `max`: read
   * back from disk, for the caller to store and then settle. Stops before the first record that
   * cannot be read now (its segment is unreadable, or it is a bad line the set-aside log cannot
   * take): it and all after it stay owed, in order, and `waiting` says why. Bad lines set aside
   * and scrubbed lines are let go of here; nothing else is until it is settled.
   */
  async nextBatch(sessionId: string, max: number): Promise<NextBatch> {
    const entries = this.index.diskOnlyOf(sessionId, max);
    if (entries.length === 0) return { kind: 'done' };
    try {
      const read = await this.reader.read(entries);
      await this.resolveEntries([...read.setAside, ...read.scrubbed]);
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
      await this.setAside(split.refused);
    } catch (error) {
      return { kind: 'unavailable', error };
    }
    await this.resolve(split.kept);
    this.events.replayed(split.kept.length);
    return { kind: 'settled', stored: split.kept.length, setAside: split.refused.length };
  }

  /**
   * Lets go of the session's disk-only records accepted at or before `acceptedUpTo` (all of
   * them by default): the session was deleted. Their segments go once nothing else in them is
   * owed. Returns how many there were, and when the newest of them was accepted (for the log
   * of a write-back that drops them).
   */
  async forget(sessionId: string, acceptedUpTo = Number.POSITIVE_INFINITY): Promise<Forgotten> {
    const entries = this.index
      .diskOnlyOf(sessionId, Number.MAX_SAFE_INTEGER)
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
   * The session's disk-only record of this id, read back from disk; undefined when none (or it
   * is corrupt: the drain sets it aside). Rejects with RecordUnreadableError while its file
   * cannot be read.
   */
  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const entry = this.index.findDiskOnly(sessionId, id);
    if (!entry) return undefined;
    const [found] = await readBack(this.files, [entry], this.cache, this.cacheable);
    // Owed but unreadable now (an outage of its file): "not there" would let a retry of its
    // client id be accepted afresh, with a new time, ahead of the original in the drain.
    if (found.kind === 'unreadable') throw new RecordUnreadableError(id, found.reason);
    return found.kind === 'record' ? found.record : undefined;
  }

  /**
   * The session's disk-only records a page of `window` may list (see selectWindow), read back.
   * A record not read back is left out, but named (`unreadable`, the nearest the cursor): one
   * in a file that cannot be read now is owed all the same, and one whose line is damaged is
   * counted (`total`) until the drain sets it aside, so a page that would list either must not
   * be answered as though it were not there. Nothing is set aside here: the drain does, and
   * only it knows whether the database took the record meanwhile.
   */
  async readWindow(
    sessionId: string,
    window: KeyWindow,
    maxBytes: number,
  ): Promise<JournalOnlyMessages> {
    const all = this.index.diskOnlyOf(sessionId, Number.MAX_SAFE_INTEGER);
    const { entries, horizon, beyondCursor } = selectWindow(all, window, maxBytes);
    const unread = entries.filter((entry) => !entry.record);
    const results =
      unread.length > 0 ? await readBack(this.files, unread, this.cache, this.cacheable) : [];
    const read = new Map(unread.map((entry, index) => [entry, results[index]]));
    const records = entries.flatMap((entry) => {
      if (entry.record) return [entry.record];
      const result = read.get(entry);
      return result?.kind === 'record' ? [result.record] : [];
    });
    // A scrubbed line is a redacted message's, stored: not missing, only not listed from here.
    const missing = unread.filter(
      (entry) => !['record', 'scrubbed'].includes(read.get(entry)?.kind ?? 'unreadable'),
    );
    const nearest = window.direction === 'forward' ? missing[0] : missing.at(-1);
    const damaged = nearest !== undefined && read.get(nearest)?.kind === 'bad';
    return {
      messages: records.map((record) => ({ record, status: AppendStatus.QUEUED })),
      horizon,
      beyondCursor,
      ...(nearest
        ? {
            unreadable: {
              id: nearest.id,
              orderKey: nearest.orderKey,
              ...(damaged ? { damaged: true } : {}),
            },
          }
        : {}),
      total: all.length,
    };
  }

  /**
   * Removes for good every copy the spool directory holds of the messages `ids` (they were
   * redacted): each of their lines in every segment, whosever, is overwritten in place by a
   * scrubbed line of the same length (scrubSegments), and each set-aside entry holding their
   * record or bytes keeps its id, time and reason without them (SetAsideLog.scrub). Only for
   * messages the database has stored: whatever the journal owed for them is let go of, and
   * what memory held of a segment that vanished is not journaled again. Idempotent; rejects
   * when a file cannot be read or written (what was scrubbed stays so: call it again).
   */
  async scrub(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const wanted = new Set(ids);
    // In the writer's turn, so that no batch is on its way to disk with them among its orphans.
    await this.writer.inTurn(() => Promise.resolve(this.dropOrphans(wanted)));
    const scrubbed = await scrubSegments(
      {
        files: this.files,
        turn: (work) => this.writer.inTurn(work),
        rewritten: (segment) => this.cache.delete(segment),
      },
      wanted,
    );
    await this.resolveEntries(
      scrubbed.flatMap(({ id, sessionId, location }) =>
        sessionId !== undefined ? [{ id, sessionId, location }] : [],
      ),
    );
    await this.setAsideLog.scrub(wanted);
  }

  /** What memory held of the messages `ids` when their segment vanished: owed no more. */
  private dropOrphans(ids: ReadonlySet<string>): void {
    const orphans = this.index.orphaned().filter(({ record }) => ids.has(record.id));
    this.index.resolve(
      orphans.map(({ record, location }) => ({
        id: record.id,
        sessionId: record.sessionId,
        location,
      })),
    );
  }

  private async resolveEntries(
    entries: readonly { id: string; sessionId: string; location: RecordLocation }[],
  ): Promise<void> {
    const emptied = this.index.resolve(entries);
    if (emptied.length === 0) return;
    const removed = await this.writer.release(emptied);
    for (const name of removed) this.cache.delete(name);
    await this.events.segmentsRemoved(removed);
  }
}

function diskEntryOf({ record, location }: JournaledRecord): DiskEntry {
  return {
    id: record.id,
    sessionId: record.sessionId,
    orderKey: record.orderKey,
    acceptedAt: record.acceptedAt,
    location,
  };
}
