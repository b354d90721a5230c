import { Inject, Injectable, Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Failpoints } from '../common/failpoints.js';
import { DatabaseHealth } from '../database/database-health.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessagesStored, WriteFailed } from '../message/message-events.js';
import {
  splitRefused,
  type Progress,
  type RefusedRecord,
  type WriteOutcome,
  type Written,
} from '../message/outcomes.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { JournalIndex } from '../spool/journal-index.js';
import { Journal } from '../spool/journal.js';
import { SpoolService, type JournaledRecord } from '../spool/spool.service.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { BACKLOG_PRUNER, MAX_PENDING_PER_SESSION } from './transcript.tokens.js';
import { HeldMoves } from './held-moves.js';
import { type PendingEntry, type PendingQueue } from './session-backlog.js';
import { describeError } from '../common/errors/describe-error.js';

// Records per transaction when a session's backlog or journal is written back.
const FLUSH_CHUNK = 1000;

/** Drops what a backlog holds that must not be written back (see SessionEraser.prune). */
export interface BacklogPruner {
  /** Stopped when it cannot tell now: the write-back then stops, and the next one tries again. */
  prune(queue: PendingQueue): Promise<Progress>;
}

const KEEP_ALL: BacklogPruner = { prune: () => Promise.resolve('done') };

/**
 * Stores accepted messages, or journals them: the one place that decides what an append's
 * status is. Every method runs inside the session's lock (it is handed the session's queue).
 * A session's messages reach the database in acceptance order: what the journal holds on disk
 * first, then what memory holds, then the fresh ones, so that the stored transcript is always
 * a prefix of the accepted one.
 */
@Injectable()
export class DurableWriter {
  private readonly logger = new Logger('DurableWriter');

  constructor(
    private readonly writer: CoalescingWriter,
    private readonly spool: SpoolService,
    private readonly index: JournalIndex,
    private readonly journal: Journal,
    private readonly health: DatabaseHealth,
    private readonly events: EventEmitter2,
    private readonly metrics: MetricsService,
    @Inject(MAX_PENDING_PER_SESSION) private readonly maxPendingPerSession: number,
    private readonly failpoints: Failpoints,
    private readonly moves: HeldMoves,
    @Inject(BACKLOG_PRUNER) private readonly pruner: BacklogPruner = KEEP_ALL,
  ) {}

  /** Stores `fresh` (accepted now, in order) behind whatever the session holds, or journals it. */
  accept(queue: PendingQueue, fresh: MessageRecord[]): Promise<WriteOutcome> {
    return this.health.admit(
      () => this.write(queue, fresh),
      () => {
        this.health.failed(queue.sessionId, undefined, queue.size + fresh.length);
        return this.hold(queue, fresh);
      },
    );
  }

  /**
   * Writes what the session holds, oldest first: done once nothing is left. Stops at the first
   * failure of the database, keeping everything not stored.
   */
  async flush(queue: PendingQueue): Promise<Progress> {
    if (!this.hasBacklog(queue)) return 'done';
    return this.health.admit(
      () => this.writeBack(queue),
      () => Promise.resolve('stopped' as const),
    );
  }

  /**
   * Journals the session's messages held in memory only, now that the disk may take them;
   * done when none is left in memory only.
   */
  async journalBuffered(queue: PendingQueue): Promise<Progress> {
    const buffered = queue.buffered();
    if (buffered.length === 0) return 'done';
    const appended = await this.spool.append(buffered.map((entry) => entry.record));
    if (appended.kind === 'unavailable') return 'stopped';
    buffered.forEach((entry, index) => queue.journaled(entry, appended.locations[index]));
    return 'done';
  }

  /**
   * A retry found these messages held (RetryLookup.held), before it is answered: one held in
   * memory only is journaled now if the disk takes it, and one whose segment vanished (SPOOL_DIR
   * replaced, a file deleted) is journaled again, so that the answer promises what it can.
   */
  async journalRetried(queue: PendingQueue, held: readonly PendingEntry[]): Promise<void> {
    for (const entry of held) {
      if (entry.location === null) await this.journalBuffered(queue);
      else if (!this.index.isOnDisk(entry.location)) await this.spool.rejournalOrphans();
    }
  }

  hasBacklog(queue: PendingQueue): boolean {
    return queue.size > 0 || this.index.hasDiskOnly(queue.sessionId);
  }

  /** Stores `fresh` behind what the session holds, once the database admitted the write. */
  private async write(queue: PendingQueue, fresh: MessageRecord[]): Promise<WriteOutcome> {
    if (this.hasBacklog(queue) && (await this.writeBack(queue)) === 'stopped') {
      return this.hold(queue, fresh);
    }
    // Answered by this write (PERSISTED): stored after what the session holds, whatever
    // this instance's clock says (see SessionWrite.after). Backlog and replays keep theirs.
    const attempt = await this.writer.submit({
      sessionId: queue.sessionId,
      records: fresh,
      after: 'stored',
    });
    if (attempt.kind === 'refused') return attempt;
    if (attempt.kind === 'unavailable') {
      this.failed(queue, attempt.error, fresh.length);
      return this.hold(queue, fresh);
    }
    this.stored(queue.sessionId, attempt);
    return { kind: 'accepted', status: AppendStatus.PERSISTED, skipped: attempt.skipped };
  }

  /**
   * Writes what the session holds, oldest first, whatever the database's health says: once
   * admitted (flush, accept), or by the holder of the probe lease, the background retry's proof
   * that messages fit again (see TranscriptRecovery). Done once nothing is left; a failure is
   * recorded as any write's.
   */
  async writeBack(queue: PendingQueue): Promise<Progress> {
    if ((await this.pruner.prune(queue)) === 'stopped') return 'stopped';
    if (this.index.hasDiskOnly(queue.sessionId) && (await this.replay(queue)) === 'stopped') {
      return 'stopped';
    }
    while (queue.size > 0) {
      const chunk = queue.peek(FLUSH_CHUNK);
      const written = await this.moves.move(queue.sessionId, () => this.writeChunk(queue, chunk));
      if (written === 'stopped') return 'stopped';
    }
    this.health.forget(queue.sessionId);
    return 'done';
  }

  /** Stores a chunk of what memory holds, and lets go of it: stopped when it is kept. */
  private async writeChunk(queue: PendingQueue, chunk: PendingEntry[]): Promise<Progress> {
    const attempt = await this.writer.submit(
      { sessionId: queue.sessionId, records: chunk.map((entry) => entry.record) },
      { isolateRefusals: true },
    );
    if (attempt.kind !== 'written') {
      this.failed(queue, attempt.kind === 'unavailable' ? attempt.error : attempt.reason, 0);
      return 'stopped';
    }
    this.stored(queue.sessionId, attempt);
    // A crash test's kill lands here: stored in the database, still in the journal.
    this.failpoints.reach('transcript.flush-committed');
    const { refused, kept } = splitRefused(chunk, attempt.refused);
    if ((await this.setAside(refused)) === 'stopped') return 'stopped';
    queue.shift(chunk.length);
    // Setting aside let go of the refused records' journal lines already.
    await this.journal.resolve(journaledOf(kept));
    return 'done';
  }

  /**
   * Stores the session's journal records read back from disk, oldest first, a batch at a time;
   * each is let go of only once stored. Stopped at the first failure, or at a record that must
   * wait: it and all after it stay owed, in order.
   */
  private async replay(queue: PendingQueue): Promise<Progress> {
    for (;;) {
      const next = await this.journal.nextBatch(queue.sessionId, FLUSH_CHUNK);
      if (next.kind === 'done') return 'done';
      if (next.kind === 'unavailable') return 'stopped';
      // Stored and let go of in one move: a read sees a record owed or stored, never both.
      const replayed = await this.moves.move(queue.sessionId, () =>
        this.replayBatch(queue, next.records),
      );
      if (replayed === 'stopped' || next.waiting) return 'stopped';
    }
  }

  /** Stores a batch read back from the journal, then settles it there: stopped when it is kept. */
  private async replayBatch(queue: PendingQueue, batch: JournaledRecord[]): Promise<Progress> {
    let refused: RefusedRecord[] = [];
    if (batch.length > 0) {
      try {
        const attempt = await this.writer.submit(
          { sessionId: queue.sessionId, records: batch.map(({ record }) => record) },
          { isolateRefusals: true },
        );
        if (attempt.kind === 'unavailable') this.failed(queue, attempt.error, 0);
        if (attempt.kind !== 'written') return 'stopped';
        this.stored(queue.sessionId, attempt);
        refused = attempt.refused;
      } catch {
        return 'stopped';
      }
    }
    return (await this.journal.settle(batch, refused)).kind === 'settled' ? 'done' : 'stopped';
  }

  /** Refused records of a flushed chunk go to the set-aside log; stopped when it cannot be written. */
  private async setAside(refused: (PendingEntry & { reason: string })[]): Promise<Progress> {
    if (refused.length === 0) return 'done';
    try {
      await this.journal.setAside(refused);
      return 'done';
    } catch (error) {
      this.logger.error(
        `Could not set aside ${refused.length} refused message(s) of session ${refused[0].record.sessionId}; keeping them: ${describeError(error)}`,
      );
      return 'stopped';
    }
  }

  /** Journals `fresh` at the tail of the session's queue: QUEUED, or BUFFERED when the disk fails. */
  private async hold(queue: PendingQueue, fresh: MessageRecord[]): Promise<WriteOutcome> {
    const appended = await this.spool.append(fresh);
    const journaled = appended.kind === 'written';
    queue.push(
      fresh.map((record, index) => ({
        record,
        location: journaled ? appended.locations[index] : null,
      })),
    );
    await this.evictPastCap(queue);
    const status = journaled ? AppendStatus.QUEUED : AppendStatus.BUFFERED;
    return { kind: 'accepted', status, skipped: [] };
  }

  /**
   * Past the cap, the oldest messages leave memory: a journaled one is left to its copy on
   * disk, which the drain replays; one held in memory only is journaled now if the disk takes
   * it, and dropped (lost, and counted) when it does not.
   */
  private async evictPastCap(queue: PendingQueue): Promise<void> {
    const cap = this.maxPendingPerSession;
    const overflow = queue.size - cap;
    if (overflow <= 0) return;
    const unjournaled = queue.peek(overflow).filter((entry) => entry.location === null);
    if (unjournaled.length > 0) {
      const appended = await this.spool.append(unjournaled.map((entry) => entry.record));
      if (appended.kind === 'written') {
        unjournaled.forEach((entry, index) => queue.journaled(entry, appended.locations[index]));
      }
    }
    // Out of memory and into the journal's index in one move: a read between the two would
    // find the messages in neither (see HeldMessages).
    const evicted = await this.moves.move(queue.sessionId, async () => {
      const shifted = queue.shift(overflow);
      await this.journal.release(journaledOf(shifted));
      return shifted;
    });
    for (const entry of evicted) {
      if (entry.location === null) {
        this.metrics.messagesDropped.inc();
        this.logger.warn(
          `pending queue full for ${queue.sessionId} (cap=${cap}): dropping oldest message to make room (on-disk spool unavailable); lost message ${entry.record.id}`,
        );
      } else {
        this.logger.warn(
          `pending queue full for ${queue.sessionId} (cap=${cap}); spooled oldest message to ${this.spool.path} for replay after DB recovery (message ${entry.record.id})`,
        );
      }
    }
  }

  private stored(sessionId: string, attempt: Written): void {
    if (this.health.succeeded(sessionId)) {
      this.logger.log('Database writable again; writing back what is pending');
    }
    if (attempt.revision !== null && attempt.inserted.length > 0) {
      this.events.emit(
        MessagesStored.event,
        new MessagesStored(sessionId, attempt.inserted, attempt.revision),
      );
    }
  }

  private failed(queue: PendingQueue, error: unknown, fresh: number): void {
    this.metrics.dbWriteFailures.inc();
    this.events.emit(WriteFailed.event, new WriteFailed(queue.sessionId));
    this.health.failed(queue.sessionId, error, queue.size + fresh);
  }
}

function journaledOf(entries: readonly PendingEntry[]): JournaledRecord[] {
  return entries.flatMap((entry) =>
    entry.location ? [{ record: entry.record, location: entry.location }] : [],
  );
}
