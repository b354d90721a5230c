import { Inject, Injectable, Logger } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { DatabaseHealth } from '../database/database-health.js';
import { SpoolRetryRequested } from '../message/message-events.js';
import { type Progress } from '../message/outcomes.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { JournalIndex } from '../spool/journal-index.js';
import { SpoolService } from '../spool/spool.service.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { DurableWriter } from './durable-writer.js';
import { SessionBacklog } from './session-backlog.js';
import { DB_RETRY_INTERVAL_MS } from '../database/database.tokens.js';
import { DB_IDLE_PROBE_MS } from './transcript.tokens.js';
import { describeError } from '../common/errors/describe-error.js';

// Sessions written back at once, so that their writes share transactions.
const FLUSH_CONCURRENCY = 16;
// How often the background retry looks for journals of instances that are gone.
const ADOPT_INTERVAL_MS = 30_000;

/**
 * What is owed outside any append: the journal found at start (written back before the
 * instance answers), the background retry (probe while the database fails or has been quiet
 * for DB_IDLE_PROBE_MS, then write back
 * every session with messages held, journal what the disk refused before), and shutdown.
 */
@Injectable()
export class TranscriptRecovery {
  private readonly logger = new Logger('Recovery');
  private timer: NodeJS.Timeout | undefined;
  private retryRun: Promise<void> | null = null;
  private lastAdoption = 0;
  // Set by shutdown: a retry asked for afterwards would write through a closing database.
  private stopped = false;

  constructor(
    private readonly backlog: SessionBacklog,
    private readonly durable: DurableWriter,
    private readonly writer: CoalescingWriter,
    private readonly spool: SpoolService,
    private readonly index: JournalIndex,
    private readonly health: DatabaseHealth,
    private readonly metrics: MetricsService,
    @Inject(DB_RETRY_INTERVAL_MS) private readonly retryIntervalMs: number,
    // 0: never (DB_IDLE_PROBE_MS).
    @Inject(DB_IDLE_PROBE_MS) private readonly idleProbeMs: number,
  ) {}

  /** Takes over what earlier runs journaled and writes it back; the newest acceptance time in it. */
  async replayAtBoot(): Promise<number> {
    const report = await this.spool.adoptOrphans();
    this.lastAdoption = Date.now();
    if (!report || report.records === 0) return report?.latestAcceptedAt ?? 0;
    const left = await this.flushSessions(report.sessions);
    if (left.length > 0) {
      this.logger.warn(
        `Boot replay left journaled messages of ${left.length} session(s) in ${this.spool.path}; ` +
          `each is written back before its next append is stored, or by the background retry`,
      );
    } else {
      this.logger.log(
        `Boot replay stored ${report.records} journaled message(s) of ${report.sessions.length} session(s)`,
      );
    }
    return report.latestAcceptedAt;
  }

  start(): void {
    if (this.retryIntervalMs <= 0) return;
    this.timer = setInterval(() => this.trigger(), this.retryIntervalMs);
    this.timer.unref();
  }

  /** Starts a background retry unless one runs. */
  trigger(): void {
    if (this.retryRun) return;
    this.retryRun = this.retryAll()
      .catch((error: unknown) =>
        this.logger.error(`Background retry failed: ${describeError(error)}`),
      )
      .finally(() => {
        this.retryRun = null;
      });
  }

  /** SpoolService.retryNow: the background retry, now (unless one runs, or shutdown began). */
  @OnEvent(SpoolRetryRequested.event)
  retryRequested(): void {
    if (this.stopped) return;
    this.trigger();
  }

  /** Stops the retry, writes back what it can, and journals what memory alone holds. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.retryRun;
    if (this.backlog.total > 0 && (!this.health.isFailing || (await this.probe()))) {
      // Sessions with older messages on disk wait for the next start: order comes first.
      const memoryOnly = this.backlog.sessions().filter((id) => !this.index.hasJournalOnly(id));
      await this.flushSessions(memoryOnly);
    }
    let lost = 0;
    for (const sessionId of this.backlog.sessions()) {
      await this.backlog.withSession(sessionId, async (backlog) => {
        const buffered = backlog.buffered().length;
        if ((await this.durable.journalBuffered(backlog)) === 'stopped') lost += buffered;
      });
    }
    const summary = `Shutdown: ${this.backlog.total - lost} pending message(s) left in the journal at ${this.spool.path}`;
    if (lost > 0) {
      this.metrics.messagesDropped.inc(lost);
      this.logger.error(
        `${summary}; ${lost} held in memory only (BUFFERED) could not be journaled and are lost`,
      );
    } else {
      this.logger.log(summary);
    }
  }

  private async retryAll(): Promise<void> {
    // Only a write finds the database failing, and an idle instance writes nothing: without a
    // probe now and then it would stay "ready" (and scribe_database_up 1) through a whole
    // outage, and a load balancer would send it the first appends to find out.
    const idle =
      this.idleProbeMs > 0 &&
      !this.health.isFailing &&
      this.health.quietForMs() >= this.idleProbeMs;
    if ((this.health.isFailing || idle) && !(await this.probe())) {
      // The database is down: memory alone is lost in a crash, so it goes to the journal as
      // soon as the disk takes it.
      await this.journalBuffered();
      return;
    }
    // A blocked lock file, segment or set-aside log is tried again on its own (shorter) backoff:
    // once fixed, what it held back replays without waiting for the next usual round.
    if (Date.now() - this.lastAdoption >= ADOPT_INTERVAL_MS || this.spool.adoptionRetryDue) {
      this.lastAdoption = Date.now();
      await this.spool.adoptOrphans();
    }
    const sessions = new Set([...this.backlog.sessions(), ...this.index.sessionsWithJournalOnly()]);
    await this.flushSessions([...sessions]);
    // Written back first: on a disk shared with the database, journal copies would take the
    // very space the write-back needs. Only what it could not store is journaled.
    await this.journalBuffered();
  }

  private async journalBuffered(): Promise<void> {
    // A database that reports its disk full most likely shares it with the journal (both live
    // in DATA_DIR by default): copies written now would take the space it needs to come back.
    // Messages held in memory only stay there (BUFFERED, as answered) until it does.
    if (this.health.status().diskFull !== null) return;
    // Records of a segment that vanished are memory only too: journaled again as soon as
    // SPOOL_DIR takes them, whether or not an append comes.
    await this.spool.rejournalOrphans();
    if (this.backlog.totalBuffered === 0) return;
    for (const sessionId of this.backlog.sessions()) {
      await this.backlog.withSession(sessionId, (backlog) => this.durable.journalBuffered(backlog));
    }
  }

  /**
   * Writes back each session, a few at a time, until the database fails; returns those not
   * finished.
   */
  private async flushSessions(sessionIds: string[]): Promise<string[]> {
    const left: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < sessionIds.length) {
        const sessionId = sessionIds[next++];
        const done =
          !this.health.isFailing &&
          (await this.backlog.withSession(sessionId, (backlog) => this.durable.flush(backlog))) ===
            'done';
        if (!done) left.push(sessionId);
      }
    };
    await Promise.all(Array.from({ length: FLUSH_CONCURRENCY }, worker));
    return left;
  }

  /** Writes back one session's backlog; done when it is stored, or when there is none. */
  private async writeBackOne(): Promise<Progress> {
    const sessionId = this.backlog.sessions()[0] ?? this.index.sessionsWithJournalOnly()[0];
    if (sessionId === undefined) return 'done';
    return this.backlog.withSession(sessionId, (backlog) => this.durable.writeBack(backlog));
  }

  /** The one probe, outside any session's lock: a probe may wait out a whole database timeout. */
  private probe(): Promise<boolean> {
    return this.health.tryProbe(
      () => this.proveWritable(),
      () => Promise.resolve(false),
    );
  }

  /** Holding the probe lease: whether the database takes messages again. */
  private async proveWritable(): Promise<boolean> {
    const beat = await this.writer.heartbeat();
    if (beat.kind === 'unavailable') {
      this.health.probeFailed(
        beat.error,
        `${this.backlog.total} message(s) pending in memory, ${this.index.sessionsWithJournalOnly().length} session(s) with messages on disk only`,
      );
      return false;
    }
    // After a full disk a heartbeat commits in the page or two that a failed write leaves
    // free, and /health would say writes work again while no message fits: then the proof
    // is the oldest backlog written back.
    if (this.health.status().diskFull !== null && (await this.writeBackOne()) === 'stopped') {
      return false;
    }
    if (this.health.succeeded()) {
      this.logger.log(
        `Database writable again; writing back ${this.backlog.total} pending message(s) of ${this.backlog.sessions().length} session(s)`,
      );
    }
    return true;
  }
}
