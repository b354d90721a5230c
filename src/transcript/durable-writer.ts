import { Inject, Injectable, Logger } from '@nestjs/common';
import { Failpoints } from '../common/failpoints.js';
import { DatabaseHealth } from '../database/database-health.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { splitRefused, type Progress, type WriteOutcome } from '../message/outcomes.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { JournalIndex } from '../spool/journal-index.js';
import { Journal } from '../spool/journal.js';
import { type JournaledRecord } from '../spool/journaled-record.js';
import { SpoolService } from '../spool/spool.service.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { BACKLOG_PRUNER, MAX_PENDING_PER_SESSION } from './transcript.tokens.js';
import { HeldMoves } from './held-moves.js';
import { JournalReplay, WRITE_BACK_CHUNK } from './journal-replay.js';
import { StoredElsewhere } from './stored-elsewhere.js';
import { WriteReports } from './write-reports.js';
import { type BacklogEntry, type Backlog } from './session-backlog.js';
import { describeError } from '../common/errors/describe-error.js';

/** Drops what a backlog holds that must not be written back (see SessionEraser.prune). */
export interface BacklogPruner {
  /** Stopped when it cannot tell now: the write-back then stops, and the next one tries again. */
  prune(backlog: Backlog): Promise<Progress>;
}

const KEEP_ALL: BacklogPruner = { prune: () => Promise.resolve('done') };

/**
 * Stores accepted messages, or journals them: the one place that decides what an append's
 * status is. Every method runs inside the session's lock (it is handed the session's backlog).
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
    private readonly reports: WriteReports,
    private readonly replayer: JournalReplay,
    private readonly metrics: MetricsService,
    @Inject(MAX_PENDING_PER_SESSION) private readonly maxPendingPerSession: number,
    private readonly failpoints: Failpoints,
    private readonly moves: HeldMoves,
    private readonly elsewhere: StoredElsewhere,
    @Inject(BACKLOG_PRUNER) private readonly pruner: BacklogPruner = KEEP_ALL,
  ) {}

  /** Stores `fresh` (accepted now, in order) behind whatever the session holds, or journals it. */
  accept(backlog: Backlog, fresh: MessageRecord[]): Promise<WriteOutcome> {
    return this.health.admit(
      () => this.write(backlog, fresh),
      () => {
        this.health.failed(backlog.sessionId, undefined, backlog.size + fresh.length);
        return this.hold(backlog, fresh);
      },
    );
  }

  /**
   * Writes what the session holds, oldest first: done once nothing is left. Stops at the first
   * failure of the database, keeping everything not stored.
   */
  async flush(backlog: Backlog): Promise<Progress> {
    if (!this.hasBacklog(backlog)) return 'done';
    return this.health.admit(
      () => this.writeBack(backlog),
      () => Promise.resolve('stopped' as const),
    );
  }

  /**
   * Journals the session's messages held in memory only, now that the disk may take them;
   * done when none is left in memory only.
   */
  async journalBuffered(backlog: Backlog): Promise<Progress> {
    const buffered = backlog.buffered();
    if (buffered.length === 0) return 'done';
    const appended = await this.spool.append(buffered.map((entry) => entry.record));
    if (appended.kind === 'unavailable') return 'stopped';
    buffered.forEach((entry, index) => backlog.journaled(entry, appended.locations[index]));
    return 'done';
  }

  /**
   * A retry found these messages held (RetryLookup.held), before it is answered: one held in
   * memory only is journaled now if the disk takes it, and one whose segment vanished (SPOOL_DIR
   * replaced, a file deleted) is journaled again, so that the answer promises what it can.
   */
  async journalRetried(backlog: Backlog, held: readonly BacklogEntry[]): Promise<void> {
    for (const entry of held) {
      if (entry.location === null) await this.journalBuffered(backlog);
      else if (!this.index.isOnDisk(entry.location)) await this.spool.rejournalOrphans();
    }
  }

  hasBacklog(backlog: Backlog): boolean {
    return backlog.size > 0 || this.index.hasJournalOnly(backlog.sessionId);
  }

  /** Stores `fresh` behind what the session holds, once the database admitted the write. */
  private async write(backlog: Backlog, fresh: MessageRecord[]): Promise<WriteOutcome> {
    if (this.hasBacklog(backlog) && (await this.writeBack(backlog)) === 'stopped') {
      return this.hold(backlog, fresh);
    }
    // Answered by this write (PERSISTED): stored after what the session holds, whatever
    // this instance's clock says (see SessionWrite.after). Backlog and replays keep theirs.
    const attempt = await this.writer.submit({
      sessionId: backlog.sessionId,
      records: fresh,
      after: 'stored',
    });
    if (attempt.kind === 'refused') return attempt;
    if (attempt.kind === 'unavailable') {
      this.reports.failed(backlog, attempt.error, fresh.length);
      return this.hold(backlog, fresh);
    }
    this.reports.stored(backlog.sessionId, attempt);
    return { kind: 'accepted', status: AppendStatus.PERSISTED, skipped: attempt.skipped };
  }

  /**
   * Writes what the session holds, oldest first, whatever the database's health says: once
   * admitted (flush, accept), or by the holder of the probe lease, the background retry's proof
   * that messages fit again (see TranscriptRecovery). Done once nothing is left; a failure is
   * recorded as any write's.
   */
  async writeBack(backlog: Backlog): Promise<Progress> {
    if ((await this.pruner.prune(backlog)) === 'stopped') return 'stopped';
    if (
      this.index.hasJournalOnly(backlog.sessionId) &&
      (await this.replayer.replay(backlog)) === 'stopped'
    ) {
      return 'stopped';
    }
    while (backlog.size > 0) {
      const chunk = backlog.peek(WRITE_BACK_CHUNK);
      const written = await this.moves.move(backlog.sessionId, () =>
        this.writeChunk(backlog, chunk),
      );
      if (written === 'stopped') return 'stopped';
    }
    this.health.forget(backlog.sessionId);
    return 'done';
  }

  /** Stores a chunk of what memory holds, and lets go of it: stopped when it is kept. */
  private async writeChunk(backlog: Backlog, chunk: BacklogEntry[]): Promise<Progress> {
    const attempt = await this.writer.submit(
      { sessionId: backlog.sessionId, records: chunk.map((entry) => entry.record) },
      { isolateRefusals: true },
    );
    if (attempt.kind !== 'written') {
      this.reports.failed(
        backlog,
        attempt.kind === 'unavailable' ? attempt.error : attempt.reason,
        0,
      );
      return 'stopped';
    }
    this.reports.stored(backlog.sessionId, attempt);
    // A crash test's kill lands here: stored in the database, still in the journal.
    this.failpoints.reach('transcript.flush-committed');
    const elsewhere = await this.elsewhere.refusals(backlog.sessionId, attempt.skipped);
    if (elsewhere === undefined) return 'stopped';
    const { refused, kept } = splitRefused(chunk, [...attempt.refused, ...elsewhere]);
    if ((await this.setAside(refused)) === 'stopped') return 'stopped';
    backlog.shift(chunk.length);
    // Setting aside let go of the refused records' journal lines already.
    await this.journal.resolve(journaledOf(kept));
    return 'done';
  }

  /** Refused records of a flushed chunk go to the set-aside log; stopped when it cannot be written. */
  private async setAside(refused: (BacklogEntry & { reason: string })[]): Promise<Progress> {
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

  /** Journals `fresh` at the tail of the session's backlog: QUEUED, or BUFFERED when the disk fails. */
  private async hold(backlog: Backlog, fresh: MessageRecord[]): Promise<WriteOutcome> {
    const appended = await this.spool.append(fresh);
    const journaled = appended.kind === 'written';
    backlog.push(
      fresh.map((record, index) => ({
        record,
        location: journaled ? appended.locations[index] : null,
      })),
    );
    await this.evictPastCap(backlog);
    const status = journaled ? AppendStatus.QUEUED : AppendStatus.BUFFERED;
    return { kind: 'accepted', status, skipped: [] };
  }

  /**
   * Past the cap, the oldest messages leave memory: a journaled one is left to its copy on
   * disk, which the drain replays; one held in memory only is journaled now if the disk takes
   * it, and dropped (lost, and counted) when it does not.
   */
  private async evictPastCap(backlog: Backlog): Promise<void> {
    const cap = this.maxPendingPerSession;
    const overflow = backlog.size - cap;
    if (overflow <= 0) return;
    const unjournaled = backlog.peek(overflow).filter((entry) => entry.location === null);
    if (unjournaled.length > 0) {
      const appended = await this.spool.append(unjournaled.map((entry) => entry.record));
      if (appended.kind === 'written') {
        unjournaled.forEach((entry, index) => backlog.journaled(entry, appended.locations[index]));
      }
    }
    // Out of memory and into the journal's index in one move: a read between the two would
    // find the messages in neither (see BacklogAndJournal).
    const evicted = await this.moves.move(backlog.sessionId, async () => {
      const shifted = backlog.shift(overflow);
      await this.journal.release(journaledOf(shifted));
      return shifted;
    });
    for (const entry of evicted) {
      if (entry.location === null) {
        this.metrics.messagesDropped.inc();
        this.logger.warn(
          `pending queue full for ${backlog.sessionId} (cap=${cap}): dropping oldest message to make room (on-disk spool unavailable); lost message ${entry.record.id}`,
        );
      } else {
        this.logger.warn(
          `pending queue full for ${backlog.sessionId} (cap=${cap}); spooled oldest message to ${this.spool.path} for replay after DB recovery (message ${entry.record.id})`,
        );
      }
    }
  }
}

function journaledOf(entries: readonly BacklogEntry[]): JournaledRecord[] {
  return entries.flatMap((entry) =>
    entry.location ? [{ record: entry.record, location: entry.location }] : [],
  );
}
