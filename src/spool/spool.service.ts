import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { Failpoints } from '../common/failpoints.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { type MessageRecord } from '../message/message-record.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { type JournalOnlyMessages, type KeyWindow } from '../message/pending-messages.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DatabaseCheck, SpoolDatabase, type DatabaseBindingView } from './database-binding.js';
import {
  type DrainOutcome,
  type DrainStep,
  type Forgotten,
  type JournaledRecord,
  type RefusedRecord,
} from './journal.js';
import { type AdoptionReport } from './journal-adoption.js';
import { type RecordLocation } from './journal-index.js';
import { type JournalAppend } from './journal-writer.js';
import { addLegacySpool } from './legacy-spool.js';
import { SET_ASIDE_LOG, isOwnFile, parseSegmentName } from './segment-names.js';
import { removeStaleTempFiles } from './stale-temp-files.js';
import { spoolParts, type SpoolParts } from './spool-parts.js';
import {
  foreignFilesOf,
  journalableNow,
  spoolStatusOf,
  type SpoolStatusView,
} from './spool-status.js';

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
  // Built and wired by spoolParts; this class drives them.
  private readonly parts: SpoolParts;

  constructor(
    config: ScribeConfig,
    instance: ScribeInstance,
    metrics: MetricsService,
    failpoints: Failpoints,
    database: SpoolDatabase,
    clock: OrderKeyGenerator,
  ) {
    this.parts = spoolParts(config, instance, metrics, failpoints, database, clock);
  }

  get path(): string {
    return this.parts.files.directory;
  }

  // The service starts even when the spool is unusable: appends are then answered BUFFERED,
  // and every later append tries the disk again.
  async onModuleInit(): Promise<void> {
    try {
      await this.parts.ownLock.ensure();
      await this.parts.setAsideLog.load();
      await removeStaleTempFiles(this.parts.files);
    } catch (error) {
      this.logger.warn(
        `on-disk spool unavailable at ${this.path}: ${describeError(error)}; messages the database cannot take are held in memory only (BUFFERED) until it can be written`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.parts.writer.close();
    await this.parts.adoption.releaseAll();
    await this.parts.ownLock.release(this.parts.index.liveRecords === 0);
  }

  /**
   * Takes over the journals of instances that are gone (at start: every earlier run's); their
   * records become disk-only entries, to be drained. Null when the directory cannot be read,
   * and until the database has answered and the spool is known to be its (DatabaseBinding).
   */
  async adoptOrphans(): Promise<AdoptionReport | null> {
    try {
      await this.parts.ownLock.ensure();
      if (!(await this.parts.binding.verify())) return null;
      const report = await this.parts.adoption.adopt();
      const legacy = await addLegacySpool(report, this.parts.files, this.parts.journal);
      if (legacy > 0) {
        this.logger.log(
          `Journaled ${legacy} message(s) found in Scribe 0.1 spool files, and deleted the files`,
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
      await this.parts.ownLock.ensure();
      this.parts.binding.assertJournalable();
      outcome = await this.parts.journal.append(records);
    } catch (error) {
      outcome = { kind: 'failed', error };
    }
    this.parts.reporter.written(outcome, records.length);
    return outcome;
  }

  /** See {@link Journal.release}. */
  release(records: readonly JournaledRecord[]): Promise<void> {
    return this.parts.journal.release(records);
  }

  /** See {@link Journal.resolve}. */
  resolve(records: readonly JournaledRecord[]): Promise<void> {
    return this.parts.journal.resolve(records);
  }

  /** See {@link Journal.setAside}. */
  setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
    return this.parts.journal.setAside(refused);
  }

  /** See {@link Journal.drain}. */
  drain(
    sessionId: string,
    store: (records: MessageRecord[]) => Promise<DrainStep>,
    batchSize: number,
  ): Promise<DrainOutcome> {
    return this.parts.journal.drain(sessionId, store, batchSize);
  }

  /** See {@link Journal.forget}. */
  forget(sessionId: string, acceptedUpTo?: number): Promise<Forgotten> {
    return this.parts.journal.forget(sessionId, acceptedUpTo);
  }

  /** See {@link Journal.find}. */
  find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    return this.parts.journal.find(sessionId, id);
  }

  /** See {@link Journal.readWindow}. */
  readWindow(sessionId: string, window: KeyWindow, maxBytes: number): Promise<JournalOnlyMessages> {
    return this.parts.journal.readWindow(sessionId, window, maxBytes);
  }

  /**
   * Journals again what memory holds of segments that vanished, when the disk takes it now
   * (the retry loop's turn: no append may come to do it); quiet when it does not.
   */
  async rejournalOrphans(): Promise<void> {
    if (this.parts.index.orphaned().length === 0) return;
    await this.checkWritable().catch(() => undefined);
  }

  /** See {@link JournalIndex.isOnDisk}. */
  isOnDisk(location: RecordLocation): boolean {
    return this.parts.index.isOnDisk(location);
  }

  hasDiskOnly(sessionId: string): boolean {
    return this.parts.index.hasDiskOnly(sessionId);
  }

  sessionsWithDiskOnly(): string[] {
    return this.parts.index.sessionsWithDiskOnly();
  }

  /** Whether an adoption round should run now for a blocked file that may have been fixed. */
  get adoptionRetryDue(): boolean {
    // Until the spool is known to be this database's, nothing of other instances is adopted:
    // each retry asks again, so that a database that comes up late is written back at once.
    return (
      this.parts.adoption.retryDue ||
      this.parts.binding.status.databaseCheck === DatabaseCheck.PENDING
    );
  }

  /** Files owing records that cannot be used now (for /health): how many. */
  get blockedCount(): number {
    return this.parts.blocked.size;
  }

  /**
   * Whether a blocked segment owes records nobody has read yet (adopted, and unreadable from
   * the start): any client id may have been accepted in it. A dead owner behind a bad lock
   * file is not counted: its segments may stay unread until an operator acts, and refusing
   * every client id meanwhile would stop the instance (see the README's limits).
   */
  get owesUnread(): boolean {
    return this.parts.blocked
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
    await this.checkJournal();
    await this.parts.files.checkWritable(this.parts.recordBytes);
  }

  /** The spool is this database's, the lock is ours, and the writer's segments are intact. */
  private async checkJournal(): Promise<void> {
    this.parts.binding.assertJournalable();
    await this.parts.ownLock.ensure();
    await this.parts.writer.verify();
  }

  async status(): Promise<SpoolStatusView & DatabaseBindingView> {
    const { writable, error } = await journalableNow(
      () => this.checkJournal(),
      () => this.parts.files.checkWritable(this.parts.recordBytes),
      () => this.parts.writer.takesAppends,
    );
    const foreign = foreignFilesOf(
      (await this.parts.files.list().catch(() => [])).filter((name) => !isOwnFile(name)),
      await this.parts.irregular(),
    );
    return {
      ...spoolStatusOf(
        this.path,
        error,
        this.parts.index,
        this.parts.setAsideLog,
        foreign,
        this.parts.blocked.list(),
      ),
      writable,
      ...this.parts.binding.status,
    };
  }
}
