import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { Failpoints } from '../common/failpoints.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { type MessageRecord } from '../message/message-record.js';
import { type JournalOnlyMessages, type KeyWindow } from '../message/pending-messages.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  DatabaseBinding,
  DatabaseCheck,
  SpoolDatabase,
  type DatabaseBindingView,
} from './database-binding.js';
import { DatabaseIdFile } from './database-id-file.js';
import {
  Journal,
  type DrainOutcome,
  type DrainStep,
  type Forgotten,
  type JournaledRecord,
  type RefusedRecord,
} from './journal.js';
import { BlockedFiles } from './blocked-files.js';
import { refuseFutureRecords } from './future-records.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { JournalAdoption, type AdoptionReport } from './journal-adoption.js';
import { type JournalFiles } from './journal-files.js';
import { NodeJournalFiles } from './node-journal-files.js';
import { JournalIndex, type RecordLocation } from './journal-index.js';
import { JournalWriter, type JournalAppend } from './journal-writer.js';
import { importLegacySpool } from './legacy-spool.js';
import { OwnLock } from './own-lock.js';
import {
  SET_ASIDE_LOG,
  SegmentNamer,
  isOwnFile,
  ownerLockName,
  parseSegmentName,
} from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { removeStaleTempFiles } from './stale-temp-files.js';
import { SpoolReporter } from './spool-reporter.js';
import { foreignFilesOf, spoolStatusOf, type SpoolStatusView } from './spool-status.js';

export type {
  DrainOutcome,
  DrainStep,
  Forgotten,
  JournaledRecord,
  RefusedRecord,
} from './journal.js';
export { RecordUnreadableError } from './journal.js';
export type { JournalAppend } from './journal-writer.js';
export type { RecordLocation } from './journal-index.js';

// A new segment begins once the active one is this big.
const SEGMENT_BYTES = 8 * 1024 * 1024;
// The longest wait before a blocked file (unreadable segment, unusable lock file or set-aside
// log) is tried again; the wait starts at DB_RETRY_INTERVAL_MS and doubles up to this.
const BLOCKED_RETRY_MAX_MS = 30_000;
// A journal line beyond the message's own bytes (MAX_MESSAGE_BYTES): its ids, keys and times.
const RECORD_ENVELOPE_BYTES = 4096;

/**
 * The journal as a Nest service: accepted messages that the database could not take, on local
 * disk, synced, in append-only segments of JSON lines, until they are stored. It knows nothing
 * of the write path: the transcript appends to it, tells it what left memory and what got
 * stored, and drains a session through a callback that answers with an outcome. This class
 * holds the instance's owner lock, and reports to the logs and metrics.
 */
@Injectable()
export class SpoolService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SpoolService.name);
  private readonly files: JournalFiles;
  private readonly index = new JournalIndex();
  private readonly setAsideLog: SetAsideLog;
  private readonly writer: JournalWriter;
  private readonly journal: Journal;
  private readonly adoption: JournalAdoption;
  private readonly namer: SegmentNamer;
  private readonly ownLock: OwnLock;
  private readonly reporter: SpoolReporter;
  // The room one record may need on disk: what readiness asks the file system for.
  private readonly recordBytes: number;
  private readonly blocked: BlockedFiles;
  private readonly binding: DatabaseBinding;

  constructor(
    config: ScribeConfig,
    instance: ScribeInstance,
    metrics: MetricsService,
    failpoints: Failpoints,
    database: SpoolDatabase,
    clock: OrderKeyGenerator,
  ) {
    this.files = new NodeJournalFiles(config.spoolDir);
    this.binding = new DatabaseBinding(
      config.spoolDir,
      new DatabaseIdFile(config.spoolDir),
      database,
      async () =>
        (await this.files.list()).filter((name) => {
          const owner = parseSegmentName(name)?.instanceId;
          return owner !== undefined && owner !== instance.id;
        }).length,
    );
    this.reporter = new SpoolReporter(this.files.directory, metrics);
    this.setAsideLog = new SetAsideLog(this.files);
    this.blocked = new BlockedFiles(
      {
        blocked: (file) => this.reporter.blocked(file),
        recovered: (file, downMs) => this.reporter.unblocked(file, downMs),
      },
      Math.max(1, config.dbRetryIntervalMs),
      Math.max(BLOCKED_RETRY_MAX_MS, config.dbRetryIntervalMs),
    );
    this.namer = new SegmentNamer(instance.id);
    this.ownLock = new OwnLock(this.files, this.namer, ownerLockName(instance.id), async () => {
      await this.irregularEntries();
    });
    this.recordBytes = config.maxMessageBytes + RECORD_ENVELOPE_BYTES;
    this.writer = new JournalWriter(this.files, this.index, this.namer, SEGMENT_BYTES, failpoints, {
      beforeNewSegment: () => this.ownLock.keep(),
      segmentLost: (lost) => this.reporter.segmentLost(lost),
      rejournaled: (count, segment) => this.reporter.rejournaled(count, segment),
    });
    this.adoption = new JournalAdoption(
      this.files,
      this.index,
      this.setAsideLog,
      instance.id,
      (entries, reason = 'corrupt') => this.reporter.setAside(entries, reason),
      this.blocked,
      undefined,
      // Judged by the instance's clock, which has moved past every stored time by now: a run
      // whose clock was ahead stored messages that far ahead too, and its journal is no
      // further in the future than they are.
      refuseFutureRecords(config.journalMaxClockAheadMs, () =>
        Math.max(clock.wallNow(), clock.latest),
      ),
    );
    this.journal = new Journal(
      this.files,
      this.index,
      this.writer,
      this.setAsideLog,
      {
        setAside: (entries, reason) => this.reporter.setAside(entries, reason),
        replayed: (count) => metrics.spoolReplays.inc(count),
        segmentsRemoved: async (names) => {
          for (const name of names) await this.adoption.segmentRemoved(name);
        },
      },
      failpoints,
      this.blocked,
    );
    metrics.observeGauge('scribe_spool_messages', () => this.index.liveRecords);
    metrics.observeGauge('scribe_spool_blocked', () => this.blocked.size);
    metrics.observeGauge('scribe_spool_bytes', () => this.index.bytes);
  }

  get path(): string {
    return this.files.directory;
  }

  // The service starts even when the spool is unusable: appends are then answered BUFFERED,
  // and every later append tries the disk again.
  async onModuleInit(): Promise<void> {
    try {
      await this.ownLock.ensure();
      await this.setAsideLog.load();
      await removeStaleTempFiles(this.files);
    } catch (error) {
      this.logger.warn(
        `on-disk spool unavailable at ${this.path}: ${describeError(error)}; messages the database cannot take are held in memory only (BUFFERED) until it can be written`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.writer.close();
    await this.adoption.releaseAll();
    await this.ownLock.release(this.index.liveRecords === 0);
  }

  /**
   * Takes over the journals of instances that are gone (at start: every earlier run's); their
   * records become disk-only entries, to be drained. Null when the directory cannot be read,
   * and until the database has answered and the spool is known to be its (DatabaseBinding).
   */
  async adoptOrphans(): Promise<AdoptionReport | null> {
    try {
      await this.ownLock.ensure();
      if (!(await this.binding.verify())) return null;
      const report = await this.adoption.adopt();
      const legacy = await importLegacySpool(this.files, this.journal);
      if (legacy.length > 0) {
        report.records += legacy.length;
        report.sessions = [...new Set([...report.sessions, ...legacy.map((r) => r.sessionId)])];
        for (const record of legacy) {
          report.latestAcceptedAt = Math.max(report.latestAcceptedAt, record.acceptedAt);
        }
        this.logger.log(
          `Journaled ${legacy.length} message(s) found in Scribe 0.1 spool files, and deleted the files`,
        );
      }
      if (report.setAside > 0) {
        this.logger.error(
          `Journal: set aside ${report.setAside} unreadable line(s) of ${report.segments} segment(s) in ${this.path}/${SET_ASIDE_LOG}`,
        );
      }
      return report;
    } catch (error) {
      this.logger.warn(`Could not read the journal at ${this.path}: ${describeError(error)}`);
      return null;
    }
  }

  /** Journals `records`: resolves once they are synced to disk, or with why they are not. */
  async append(records: MessageRecord[]): Promise<JournalAppend> {
    let outcome: JournalAppend;
    try {
      await this.ownLock.ensure();
      this.binding.assertJournalable();
      outcome = await this.journal.append(records);
    } catch (error) {
      outcome = { kind: 'failed', error };
    }
    this.reporter.written(outcome, records.length);
    return outcome;
  }

  /** See {@link Journal.release}. */
  release(records: readonly JournaledRecord[]): Promise<void> {
    return this.journal.release(records);
  }

  /** See {@link Journal.resolve}. */
  resolve(records: readonly JournaledRecord[]): Promise<void> {
    return this.journal.resolve(records);
  }

  /** See {@link Journal.setAside}. */
  setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
    return this.journal.setAside(refused);
  }

  /** See {@link Journal.drain}. */
  drain(
    sessionId: string,
    store: (records: MessageRecord[]) => Promise<DrainStep>,
    batchSize: number,
  ): Promise<DrainOutcome> {
    return this.journal.drain(sessionId, store, batchSize);
  }

  /** See {@link Journal.forget}. */
  forget(sessionId: string, acceptedUpTo?: number): Promise<Forgotten> {
    return this.journal.forget(sessionId, acceptedUpTo);
  }

  /** See {@link Journal.find}. */
  find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    return this.journal.find(sessionId, id);
  }

  /** See {@link Journal.readWindow}. */
  readWindow(sessionId: string, window: KeyWindow, maxBytes: number): Promise<JournalOnlyMessages> {
    return this.journal.readWindow(sessionId, window, maxBytes);
  }

  /**
   * Journals again what memory holds of segments that vanished, when the disk takes it now
   * (the retry loop's turn: no append may come to do it); quiet when it does not.
   */
  async rejournalOrphans(): Promise<void> {
    if (this.index.orphaned().length === 0) return;
    await this.checkWritable().catch(() => undefined);
  }

  /** See {@link JournalIndex.isOnDisk}. */
  isOnDisk(location: RecordLocation): boolean {
    return this.index.isOnDisk(location);
  }

  hasDiskOnly(sessionId: string): boolean {
    return this.index.hasDiskOnly(sessionId);
  }

  sessionsWithDiskOnly(): string[] {
    return this.index.sessionsWithDiskOnly();
  }

  /** Whether an adoption round should run now for a blocked file that may have been fixed. */
  get adoptionRetryDue(): boolean {
    // Until the spool is known to be this database's, nothing of other instances is adopted:
    // each retry asks again, so that a database that comes up late is written back at once.
    return this.adoption.retryDue || this.binding.status.databaseCheck === DatabaseCheck.PENDING;
  }

  /** Files owing records that cannot be used now (for /health): how many. */
  get blockedCount(): number {
    return this.blocked.size;
  }

  /**
   * Whether a blocked segment owes records nobody has read yet (adopted, and unreadable from
   * the start): any client id may have been accepted in it. A dead owner behind a bad lock
   * file is not counted: its segments may stay unread until an operator acts, and refusing
   * every client id meanwhile would stop the instance (see the README's limits).
   */
  get owesUnread(): boolean {
    return this.blocked
      .list()
      .some((file) => file.records === null && parseSegmentName(file.source) !== null);
  }

  /**
   * Rejects when a message could not be journaled right now (used by /health and spoolStatus):
   * the owner lock cannot be taken, the active segment vanished and no new one can be begun
   * (this begins it, and journals again what memory held of the vanished one), or the file
   * system has no room for the largest record the configuration allows, or no file can be
   * written there; or the spool is another database's.
   */
  async checkWritable(): Promise<void> {
    this.binding.assertJournalable();
    await this.ownLock.ensure();
    await this.writer.verify();
    await this.files.checkWritable(this.recordBytes);
  }

  async status(): Promise<SpoolStatusView & DatabaseBindingView> {
    let error: string | null = null;
    try {
      await this.checkWritable();
    } catch (cause) {
      error = describeError(cause);
    }
    const foreign = foreignFilesOf(
      (await this.files.list().catch(() => [])).filter((name) => !isOwnFile(name)),
      await this.irregularEntries(),
    );
    return {
      ...spoolStatusOf(
        this.path,
        error,
        this.index,
        this.setAsideLog,
        foreign,
        this.blocked.list(),
      ),
      ...this.binding.status,
    };
  }

  /** Symlinks, directories and the like in the directory: never opened, warned about once. */
  private async irregularEntries() {
    const entries = await this.files.irregular().catch(() => []);
    this.reporter.irregular(entries);
    return entries;
  }
}
