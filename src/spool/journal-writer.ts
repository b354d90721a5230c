import { Mutex } from 'async-mutex';
import { type Failpoints } from '../common/failpoints.js';
import { type MessageRecord } from '../message/message-record.js';
import { type Unavailable } from '../message/outcomes.js';
import { encodeJournalLine } from './journal-codec.js';
import { type FileIdentity, type JournalFiles, type WritableFile } from './journal-files.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { type JournalIndex } from './journal-index.js';
import { type OrphanRecord } from './journal-moves.js';
import { type RecordLocation } from './journal-ledger.js';
import { type SegmentNamer } from './segment-names.js';
import {
  NO_EVENTS,
  SegmentLostError,
  type SegmentWatch,
  sameFile,
  type WriterEvents,
} from './segment-loss.js';
import { SyncFailedError, writeSynced } from './synced-write.js';

/** What a journal append came to: on disk and synced, or not there at all. */
export type JournalAppend = { kind: 'written'; locations: RecordLocation[] } | Unavailable;

interface Waiting {
  records: MessageRecord[];
  lines: Buffer[];
  resolve: (outcome: JournalAppend) => void;
}

interface ActiveSegment {
  name: string;
  file: WritableFile;
  size: number;
  /** The file the handle writes (fstat when it was created). */
  identity: FileIdentity;
  /** SPOOL_DIR's own inode (lstat) when the segment was begun. */
  directory: FileIdentity;
}

/**
 * Group commit for the journal: appends that arrive while a write and its fdatasync run go to
 * disk together in the next one, so durability costs one sync per batch, not per message. An
 * append resolves only once its lines are synced. A write that fails is cut back off the
 * segment so the next batch starts on a line boundary; when that is impossible, or the sync
 * itself failed (after a failed fsync the kernel's copy cannot be trusted), the segment is
 * given up and the next batch begins a new one.
 */
export class JournalWriter {
  private active: ActiveSegment | null = null;
  private waiting: Waiting[] = [];
  private scheduled = false;
  // Every operation on this instance's segment files takes a turn: writes, deletions, close.
  private readonly turns = new Mutex();
  // Set when a segment vanished, until a new one is begun: the journal is not writable.
  private lostError: SegmentLostError | null = null;

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    private readonly namer: SegmentNamer,
    // The files of this writer's segments that still owe records, to tell when one vanished
    // (over the same files and index as this writer).
    private readonly watch: SegmentWatch,
    private readonly segmentBytes: number,
    private readonly failpoints: Failpoints,
    private readonly events: WriterEvents = NO_EVENTS,
  ) {}

  /**
   * Rejects while the journal cannot take a record: the active segment vanished (it is given up
   * here when it did) and no new one could be begun yet. Records orphaned by a vanished segment
   * are journaled again on the way.
   */
  verify(): Promise<void> {
    return this.turns.runExclusive(async () => {
      await this.checkSegments();
      if (!this.lostError && this.index.orphaned().length === 0) return;
      const segment = await this.segmentForWrite();
      await this.writeBatch(segment, []);
    });
  }

  /**
   * Whether the open segment takes the next append as it stands (intact when last checked: a
   * vanished one is no longer open; room left): a directory that refuses new segments (chmod
   * 0500 in place) does not stop it.
   */
  get takesAppends(): boolean {
    return this.active !== null && this.active.size < this.segmentBytes;
  }

  append(records: MessageRecord[]): Promise<JournalAppend> {
    const lines = records.map(encodeJournalLine);
    return new Promise((resolve) => {
      this.waiting.push({ records, lines, resolve });
      if (this.scheduled) return;
      this.scheduled = true;
      void this.turns.runExclusive(() => {
        this.scheduled = false;
        return this.flush();
      });
    });
  }

  /**
   * Deletes the segments among `names` that owe no record any more and take no more writes;
   * the active one is closed first, and the next append begins a new one.
   */
  release(names: readonly string[]): Promise<string[]> {
    return this.turns.runExclusive(async () => {
      const removed: string[] = [];
      for (const name of names) {
        if (this.index.liveIn(name) > 0) continue;
        if (this.active?.name === name) {
          const active = this.active;
          this.active = null;
          this.index.seal(name);
          await active.file.close().catch(() => undefined);
        }
        if (!this.index.isSealed(name)) continue;
        try {
          await this.files.remove(name);
        } catch {
          // Left on disk, sealed and counted: the next start adopts it again and the store
          // skips what it holds. A failed unlink must not fail the drain that stored them.
          continue;
        }
        this.index.removeSegment(name);
        this.watch.forget(name);
        removed.push(name);
      }
      return removed;
    });
  }

  /**
   * Runs `work` in this writer's turn: no append, cut-back or deletion of a segment runs
   * meanwhile, so `work` may rewrite a line of a segment in place (a scrub) without a write of
   * the same file landing beside it half done. `work` must not call this writer.
   */
  inTurn<T>(work: () => Promise<T>): Promise<T> {
    return this.turns.runExclusive(work);
  }

  /** Closes the active segment (its file stays); appends after this begin a new one. */
  close(): Promise<void> {
    return this.turns.runExclusive(async () => {
      if (this.active) await this.seal(this.active);
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting.splice(0);
    if (batch.length === 0) return;
    try {
      // A batch that finds its segment gone is answered not written: the vanished file may
      // have taken records with it, and the journal says so before it takes any more.
      await this.checkSegments();
      await this.writeBatch(await this.segmentForWrite(), batch);
    } catch (error) {
      for (const waiting of batch) waiting.resolve({ kind: 'unavailable', error });
    }
  }

  /** Writes the orphans (see JournalIndex.dropSegment), then `batch`, and syncs; rejects when not. */
  private async writeBatch(segment: ActiveSegment, batch: Waiting[]): Promise<void> {
    const orphans = this.index.orphaned();
    const orphanLines = orphans.map((orphan) => encodeJournalLine(orphan.record));
    const data = Buffer.concat([...orphanLines, ...batch.flatMap((waiting) => waiting.lines)]);
    const start = segment.size;
    try {
      await writeSynced(segment.file, data, start, this.failpoints);
    } catch (error) {
      await this.cutBack(segment, start, error);
      throw error;
    }
    segment.size = start + data.length;
    this.lostError = null;
    let offset = start;
    const next = (line: Buffer): RecordLocation => {
      const location = { segment: segment.name, offset, length: line.length };
      offset += line.length;
      return location;
    };
    let rejournaled = 0;
    orphans.forEach((orphan: OrphanRecord, index) => {
      if (this.index.rejournaled(orphan, next(orphanLines[index]))) rejournaled += 1;
    });
    // Said only now, of what this synced write holds: until here they were memory only.
    if (rejournaled > 0) this.events.rejournaled(rejournaled, segment.name);
    for (const waiting of batch) {
      const locations = waiting.lines.map((line, index) => {
        const location = next(line);
        const record = waiting.records[index];
        this.index.addLive(record.sessionId, record.acceptedAt, location, record);
        return location;
      });
      waiting.resolve({ kind: 'written', locations });
    }
  }

  /**
   * Compares the active segment's file with what its name is now, and SPOOL_DIR with what it
   * was (two lstats per batch, as the database's check does one); when the segment's name
   * finds another file, every segment of this writer that still owes records is given up that
   * vanished (a removed directory takes them all), its held records orphaned. Throws when
   * anything vanished or the directory is refused.
   */
  private async checkSegments(): Promise<void> {
    for (const { name, lost } of await this.watch.found()) this.events.segmentFound(name, lost);
    if (!this.active) return;
    if (await this.watch.intact(this.active.name, this.active.identity)) {
      await this.watch.checkDirectory(this.active.directory);
      return;
    }
    const active = this.active;
    this.active = null;
    await active.file.close().catch(() => undefined);
    const lost = await this.watch.giveUp(active.name);
    for (const segment of lost) this.events.segmentLost(segment);
    this.lostError = new SegmentLostError(lost);
    throw this.lostError;
  }

  private async cutBack(segment: ActiveSegment, size: number, error: unknown): Promise<void> {
    let cut = false;
    try {
      await segment.file.truncate(size);
      cut = true;
    } catch {
      // Given up below.
    }
    if (!cut || error instanceof SyncFailedError) await this.seal(segment);
  }

  private async segmentForWrite(): Promise<ActiveSegment> {
    if (this.active && this.active.size >= this.segmentBytes) await this.seal(this.active);
    if (!this.active) {
      await this.events.beforeNewSegment();
      // The directory itself (lstat): a symlink in its place is refused, not followed, and one
      // this process cannot write is said to be so before a record is promised to it.
      const directory = await this.files.ensureDirectory();
      const name = this.namer.next();
      const file = await this.files.create(name);
      let identity: FileIdentity;
      try {
        identity = await file.identity();
        // Swapped between the check and the create, the new file is in the other directory.
        if (!sameFile(await this.files.checkDirectory(), directory)) {
          throw new SpoolDirectoryError(this.files.directory, 'another directory than before');
        }
      } catch (error) {
        await file.close().catch(() => undefined);
        await this.files.remove(name).catch(() => undefined);
        throw error;
      }
      this.index.addSegment(name, false);
      this.watch.watch(name, identity);
      this.active = { name, file, size: 0, identity, directory };
    }
    return this.active;
  }

  /** No more writes to `segment`; deleted at once when it owes nothing. */
  private async seal(segment: ActiveSegment): Promise<void> {
    if (this.active === segment) this.active = null;
    this.index.seal(segment.name);
    await segment.file.close().catch(() => undefined);
    if (this.index.liveIn(segment.name) === 0) {
      await this.files.remove(segment.name).catch(() => undefined);
      this.index.removeSegment(segment.name);
      this.watch.forget(segment.name);
    }
  }
}
