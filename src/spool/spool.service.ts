import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { describeError } from '../common/errors/describe-error.js';
import { SpoolRetryRequested } from '../message/message-events.js';
import { type MessageRecord } from '../message/message-record.js';
import { BlockedFiles } from './blocked-files.js';
import { DatabaseBinding } from './database-binding.js';
import { DatabaseCheck, type DatabaseBindingView } from './database-binding-rules.js';
import { JournalAdoption, type AdoptionReport } from './journal-adoption.js';
import { type JournalFiles } from './journal-files.js';
import { JournalIndex } from './journal-index.js';
import { JournalWriter, type JournalAppend } from './journal-writer.js';
import { Journal } from './journal.js';
import { addLegacySpool } from './legacy-spool.js';
import { OwnLock } from './own-lock.js';
import { SET_ASIDE_LOG, isOwnFile, parseSegmentName } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { SpoolReporter } from './spool-reporter.js';
import { removeStaleTempFiles } from './stale-temp-files.js';
import {
  JOURNAL_FILES,
  SPOOL_DIRECTORY,
  SPOOL_IRREGULAR,
  SPOOL_RECORD_BYTES,
  type IrregularEntries,
} from './spool.tokens.js';
import {
  foreignFilesOf,
  journalableNow,
  spoolStatusOf,
  type SpoolStatusView,
} from './spool-status.js';

/**
 * The journal as a Nest service: accepted messages that the database could not take, on local
 * disk, synced, in append-only segments of JSON lines, until they are stored. It knows nothing
 * of the write path: the transcript appends through it, and tells Journal (exported by
 * SpoolModule) what left memory and what got stored, and drains a session through it. This
 * class holds the instance's owner lock, adopts other runs' journals, answers readiness and
 * the admin status, and reports to the logs and metrics. Its parts are spoolProviders.
 */
@Injectable()
export class SpoolService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SpoolService.name);
  // Whether the journal took its last append or passed its last check: what readiness reads.
  private lastSeenWritable = true;

  constructor(
    @Inject(SPOOL_DIRECTORY) readonly path: string,
    @Inject(JOURNAL_FILES) private readonly files: JournalFiles,
    @Inject(SPOOL_RECORD_BYTES) private readonly recordBytes: number,
    @Inject(SPOOL_IRREGULAR) private readonly irregular: IrregularEntries,
    private readonly index: JournalIndex,
    private readonly binding: DatabaseBinding,
    private readonly reporter: SpoolReporter,
    private readonly setAsideLog: SetAsideLog,
    private readonly blocked: BlockedFiles,
    private readonly ownLock: OwnLock,
    private readonly writer: JournalWriter,
    private readonly adoption: JournalAdoption,
    private readonly journal: Journal,
    private readonly events: EventEmitter2,
  ) {}

  /**
   * Asks the write path to try the database now rather than at the next background retry:
   * after the database is back (or its disk has room again), what is held in memory and
   * in the journal is written back at once. Returns at once; the retry runs in the background,
   * and a retry already under way is not started twice. Emits SpoolRetryRequested (the event
   * `'spool.retry-requested'`, SPOOL_RETRY_REQUESTED_EVENT), which TranscriptRecovery handles.
   */
  retryNow(): void {
    this.events.emit(SpoolRetryRequested.event, new SpoolRetryRequested());
  }

  // The service starts even when the spool is unusable: appends are then answered BUFFERED,
  // and every later append tries the disk again.
  async onModuleInit(): Promise<void> {
    try {
      await this.ownLock.ensure();
      await this.setAsideLog.load();
      await removeStaleTempFiles(this.files);
    } catch (error) {
      this.lastSeenWritable = false;
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
   * records become journal-only entries, to be drained. Null when the directory cannot be read,
   * and until the database has answered and the spool is known to be its (DatabaseBinding).
   */
  async adoptOrphans(): Promise<AdoptionReport | null> {
    try {
      await this.ownLock.ensure();
      if (!(await this.binding.verify())) return null;
      const report = await this.adoption.adopt();
      const legacy = await addLegacySpool(report, this.files, this.journal);
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
      await this.ownLock.ensure();
      await this.binding.assertJournalable();
      outcome = await this.journal.append(records);
    } catch (error) {
      outcome = { kind: 'unavailable', error };
    }
    this.lastSeenWritable = outcome.kind === 'written';
    this.reporter.written(outcome, records.length);
    return outcome;
  }

  /**
   * Removes for good every copy the spool directory holds of the messages `ids`, for
   * redactMessage (see Journal.scrub): their journal lines become scrubbed lines of the same
   * length, their set-aside entries lose their record and bytes. Only for messages the database
   * has stored. Rejects when a file cannot be read or written; idempotent: call it again.
   */
  scrub(ids: readonly string[]): Promise<void> {
    return this.journal.scrub(ids);
  }

  /**
   * Journals again what memory holds of segments that vanished, when the disk takes it now
   * (the retry loop's turn: no append may come to do it); quiet when it does not.
   */
  async rejournalOrphans(): Promise<void> {
    if (this.index.orphaned().length === 0) return;
    await this.checkWritable().catch(() => undefined);
  }

  /** Whether an adoption round should run now for a blocked file that may have been fixed. */
  get adoptionRetryDue(): boolean {
    // Until the spool is known to be this database's, nothing of other instances is adopted:
    // each retry asks again, so that a database that comes up late is written back at once.
    return this.adoption.retryDue || this.binding.status.databaseCheck === DatabaseCheck.PENDING;
  }

  /**
   * Whether a blocked segment owes records nobody has read yet (adopted, and unreadable from
   * the start): any client id may have been accepted in it. A dead owner behind a bad lock
   * file is not counted: its segments may stay unread until an operator acts, and refusing
   * every client id meanwhile would stop the instance (see docs/configuration.md).
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
    try {
      await this.checkJournal();
      await this.files.checkWritable(this.recordBytes);
      this.lastSeenWritable = true;
    } catch (error) {
      this.lastSeenWritable = false;
      throw error;
    }
  }

  /**
   * Whether the journal took its last append, or passed its last check (checkWritable), with
   * no I/O: false from a start that found it unusable until either succeeds.
   */
  get writableAsLastSeen(): boolean {
    return this.lastSeenWritable;
  }

  /** The spool is this database's, the lock is ours, and the writer's segments are intact. */
  private async checkJournal(): Promise<void> {
    await this.binding.assertJournalable();
    await this.ownLock.ensure();
    await this.writer.verify();
  }

  async status(): Promise<SpoolStatusView & DatabaseBindingView> {
    const { writable, error } = await journalableNow(
      () => this.checkJournal(),
      () => this.files.checkWritable(this.recordBytes),
      () => this.writer.takesAppends,
    );
    const foreign = foreignFilesOf(
      (await this.files.list().catch(() => [])).filter((name) => !isOwnFile(name)),
      await this.irregular(),
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
      writable,
      ...this.binding.status,
    };
  }
}
