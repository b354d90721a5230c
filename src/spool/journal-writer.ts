import { Mutex } from 'async-mutex';
import { Failpoints } from '../common/failpoints.js';
import { type MessageRecord } from '../message/message-record.js';
import { encodeJournalLine } from './journal-codec.js';
import { type JournalFiles, type WritableFile } from './journal-files.js';
import { type JournalIndex, type RecordLocation } from './journal-index.js';
import { type SegmentNamer } from './segment-names.js';
import { describeError } from '../common/errors/describe-error.js';

/** What a journal append came to: on disk and synced, or not there at all. */
export type JournalAppend =
  { kind: 'written'; locations: RecordLocation[] } | { kind: 'failed'; error: unknown };

interface Waiting {
  records: MessageRecord[];
  lines: Buffer[];
  resolve: (outcome: JournalAppend) => void;
}

interface ActiveSegment {
  name: string;
  file: WritableFile;
  size: number;
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

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    private readonly namer: SegmentNamer,
    private readonly segmentBytes: number,
    private readonly failpoints: Failpoints = new Failpoints(),
  ) {}

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
        removed.push(name);
      }
      return removed;
    });
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
    let segment: ActiveSegment;
    try {
      segment = await this.segmentForWrite();
    } catch (error) {
      for (const waiting of batch) waiting.resolve({ kind: 'failed', error });
      return;
    }
    const data = Buffer.concat(batch.flatMap((waiting) => waiting.lines));
    const start = segment.size;
    try {
      await this.write(segment, data, start);
    } catch (error) {
      await this.cutBack(segment, start, error);
      for (const waiting of batch) waiting.resolve({ kind: 'failed', error });
      return;
    }
    segment.size = start + data.length;
    let offset = start;
    for (const waiting of batch) {
      const locations = waiting.lines.map((line, index) => {
        const location = { segment: segment.name, offset, length: line.length };
        offset += line.length;
        const record = waiting.records[index];
        this.index.addLive(record.sessionId, record.acceptedAt, location);
        return location;
      });
      waiting.resolve({ kind: 'written', locations });
    }
  }

  private async write(segment: ActiveSegment, data: Buffer, start: number): Promise<void> {
    if (this.failpoints.isArmed('journal.torn-write')) {
      // A crash test's kill lands half way through the batch: a torn tail on disk.
      const half = Math.floor(data.length / 2);
      await segment.file.write(data.subarray(0, half), start);
      this.failpoints.reach('journal.torn-write');
      await segment.file.write(data.subarray(half), start + half);
    } else {
      await segment.file.write(data, start);
    }
    try {
      await segment.file.sync();
    } catch (error) {
      throw new SyncFailedError(error);
    }
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
      const name = this.namer.next();
      const file = await this.files.create(name);
      this.index.addSegment(name, false);
      this.active = { name, file, size: 0 };
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
    }
  }
}

/** The data reached the file but fdatasync failed: the segment can no longer be trusted. */
class SyncFailedError extends Error {
  override readonly name = 'SyncFailedError';
  readonly code: unknown;

  constructor(cause: unknown) {
    super(`fdatasync failed: ${describeError(cause)}`, { cause });
    this.code = (cause as { code?: unknown } | null)?.code;
  }
}
