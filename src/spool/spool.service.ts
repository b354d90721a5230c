import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { Failpoints } from '../common/failpoints.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { type MessageRecord } from '../message/message-record.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { JournalAdoption, type AdoptionReport } from './journal-adoption.js';
import { NodeJournalFiles, type JournalFiles } from './journal-files.js';
import { JournalIndex, type DiskEntry, type RecordLocation } from './journal-index.js';
import { readBack } from './journal-reader.js';
import { JournalWriter, type JournalAppend } from './journal-writer.js';
import { OwnerLock } from './owner-lock.js';
import { SegmentNamer, TEMP_PREFIX, isOwnFile, ownerLockName } from './segment-names.js';
import { SetAsideLog, type SetAsideEntry } from './set-aside-log.js';
import { spoolStatusOf, type SpoolStatusView } from './spool-status.js';

export type { JournalAppend } from './journal-writer.js';
export type { RecordLocation } from './journal-index.js';

/** A record the database refused, with its reason: it is set aside, not retried. */
export interface RefusedRecord {
  record: MessageRecord;
  reason: string;
}

/** What the drain's store callback made of one batch. */
export type DrainStep =
  { kind: 'stored'; refused: RefusedRecord[] } | { kind: 'failed'; error: unknown };

/** What a drain came to: all of the session's disk-only records gone, or stopped (and kept). */
export type DrainOutcome =
  | { kind: 'drained'; stored: number; setAside: number }
  | { kind: 'failed'; stored: number; remaining: boolean; error: unknown };

/** A journaled record, with the place that proves it is on disk. */
export interface JournaledRecord {
  record: MessageRecord;
  location: RecordLocation;
}

// New segments once the active one is this big.
const SEGMENT_BYTES = 8 * 1024 * 1024;
// Leftover temp files (a crash during the writability check) are removed once this old.
export const TEMP_FILE_GRACE_MS = 60_000;

/**
 * The journal: accepted messages that the database could not take, on local disk, synced, in
 * append-only segments of JSON lines, until they are stored. It knows nothing of the write
 * path: the transcript appends to it, tells it what left memory and what got stored, and
 * drains a session through a callback that answers with an outcome.
 */
@Injectable()
export class SpoolService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SpoolService.name);
  private readonly files: JournalFiles;
  private readonly index = new JournalIndex();
  private readonly setAsideLog: SetAsideLog;
  private readonly writer: JournalWriter;
  private readonly adoption: JournalAdoption;
  private readonly namer: SegmentNamer;
  private ownLock: OwnerLock | null = null;
  private lastWriteError: string | null = null;

  constructor(
    config: ScribeConfig,
    private readonly instance: ScribeInstance,
    private readonly metrics: MetricsService,
    private readonly failpoints: Failpoints,
  ) {
    this.files = new NodeJournalFiles(config.spoolDir);
    this.setAsideLog = new SetAsideLog(this.files);
    this.namer = new SegmentNamer(instance.id);
    this.writer = new JournalWriter(this.files, this.index, this.namer, SEGMENT_BYTES, failpoints);
    this.adoption = new JournalAdoption(
      this.files,
      this.index,
      this.setAsideLog,
      instance.id,
      (entries) => this.reportSetAside(entries, 'corrupt'),
    );
    metrics.observeGauge('scribe_spool_messages', () => this.index.liveRecords);
    metrics.observeGauge('scribe_spool_bytes', () => this.index.bytes);
  }

  get path(): string {
    return this.files.directory;
  }

  // The service starts even when the spool is unusable: appends are then answered BUFFERED,
  // and every later append tries the disk again.
  async onModuleInit(): Promise<void> {
    try {
      await this.ready();
      await this.setAsideLog.load();
      await this.removeStaleTempFiles();
    } catch (error) {
      this.logger.warn(
        `on-disk spool unavailable at ${this.path}: ${describeError(error)}; accepted messages the database cannot take are held in memory only (BUFFERED) until it can be written`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.writer.close();
    await this.adoption.releaseAll();
    if (this.ownLock && this.index.liveRecords === 0) {
      await this.files.remove(ownerLockName(this.instance.id)).catch(() => undefined);
    }
    await this.ownLock?.release();
    this.ownLock = null;
  }

  /**
   * Takes over the journals of instances that are gone (at start: every earlier run's) and
   * returns what is owed; their records become disk-only entries, to be drained.
   */
  async adoptOrphans(): Promise<AdoptionReport | null> {
    try {
      await this.ready();
      const report = await this.adoption.adopt();
      if (report.setAside > 0) {
        this.logger.error(
          `Journal: set aside ${report.setAside} unreadable line(s) of ${report.segments} segment(s) in ${this.path}/set-aside.jsonl`,
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
    try {
      await this.ready();
    } catch (error) {
      return this.noteWrite({ kind: 'failed', error }, records.length);
    }
    return this.noteWrite(await this.writer.append(records), records.length);
  }

  /** These journaled records left memory: from now on the drain reads them back from disk. */
  release(records: readonly JournaledRecord[]): void {
    this.index.addDiskOnly(
      records.map(({ record, location }) => ({
        id: record.id,
        sessionId: record.sessionId,
        orderKey: record.orderKey,
        acceptedAt: record.acceptedAt,
        location,
      })),
    );
  }

  /** These journaled records are stored: the journal owes them no more. */
  async resolve(records: readonly JournaledRecord[]): Promise<void> {
    const emptied = this.index.resolve(
      records.map(({ record, location }) => ({
        id: record.id,
        sessionId: record.sessionId,
        location,
      })),
    );
    if (emptied.length === 0) return;
    for (const name of await this.writer.release(emptied)) await this.adoption.segmentRemoved(name);
  }

  /**
   * Keeps records the database refused in the set-aside log (synced) with their reasons, then
   * lets go of their journaled copies. Rejects when the log cannot be written: they stay owed.
   */
  async setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
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
    this.reportSetAside(entries, 'refused');
    await this.resolve(
      refused.flatMap(({ record, location }) => (location ? [{ record, location }] : [])),
    );
  }

  /**
   * Stores the session's disk-only records, oldest first, `batchSize` at a time, through
   * `store`. Each batch is let go only after `store` answered that it is stored; refused
   * records are set aside. Stops at the first failure, keeping that batch and all after it.
   */
  async drain(
    sessionId: string,
    store: (records: MessageRecord[]) => Promise<DrainStep>,
    batchSize: number,
  ): Promise<DrainOutcome> {
    let stored = 0;
    let setAside = 0;
    for (;;) {
      const entries = this.index.diskOnlyOf(sessionId, batchSize);
      if (entries.length === 0) return { kind: 'drained', stored, setAside };
      let batch: JournaledRecord[];
      let step: DrainStep;
      try {
        batch = await this.readEntries(entries);
        step = batch.length > 0 ? await store(batch.map(({ record }) => record)) : stored_;
      } catch (error) {
        return { kind: 'failed', stored, remaining: true, error };
      }
      if (step.kind === 'failed')
        return { kind: 'failed', stored, remaining: true, error: step.error };
      // A crash test's kill lands here: stored in the database, still owed by the journal.
      this.failpoints.reach('spool.drain-committed');
      const refusedIds = new Set(step.refused.map(({ record }) => record.id));
      try {
        await this.setAside(
          batch
            .filter(({ record }) => refusedIds.has(record.id))
            .map(({ record, location }) => ({
              record,
              location,
              reason: step.refused.find((refused) => refused.record.id === record.id)?.reason ?? '',
            })),
        );
      } catch (error) {
        return { kind: 'failed', stored, remaining: true, error };
      }
      await this.resolve(batch.filter(({ record }) => !refusedIds.has(record.id)));
      stored += batch.length - refusedIds.size;
      setAside += refusedIds.size;
      this.metrics.spoolReplays.inc(batch.length - refusedIds.size);
    }
  }

  /** The session's disk-only record of this id, read back from disk; undefined when none. */
  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const entry = this.index.findDiskOnly(sessionId, id);
    if (!entry) return undefined;
    const [found] = await readBack(this.files, [entry]);
    return found?.kind === 'record' ? found.record : undefined;
  }

  hasDiskOnly(sessionId: string): boolean {
    return this.index.hasDiskOnly(sessionId);
  }

  sessionsWithDiskOnly(): string[] {
    return this.index.sessionsWithDiskOnly();
  }

  /** Rejects when a file cannot be created in the directory right now (used by /health). */
  checkWritable(): Promise<void> {
    return this.files.checkWritable();
  }

  async status(): Promise<SpoolStatusView> {
    let error: string | null = null;
    try {
      await this.checkWritable();
    } catch (cause) {
      error = describeError(cause);
    }
    const foreign = (await this.files.list().catch(() => [])).filter((name) => !isOwnFile(name));
    return spoolStatusOf(this.path, error, this.index, this.setAsideLog, foreign);
  }

  /** Reads back `entries`; unreadable ones are set aside at once, so they cannot stall the drain. */
  private async readEntries(entries: DiskEntry[]): Promise<JournaledRecord[]> {
    const results = await readBack(this.files, entries);
    const unreadable: SetAsideEntry[] = [];
    const readable: JournaledRecord[] = [];
    results.forEach((result, index) => {
      const entry = entries[index];
      if (result.kind === 'record') {
        readable.push({ record: result.record, location: entry.location });
      } else {
        unreadable.push({
          at: Date.now(),
          reason: result.reason,
          source: entry.location.segment,
          offset: entry.location.offset,
          sessionId: entry.sessionId,
          messageId: entry.id,
        });
      }
    });
    if (unreadable.length > 0) {
      await this.setAsideLog.append(unreadable);
      this.reportSetAside(unreadable, 'corrupt');
      const lost = new Set(unreadable.map((entry) => entry.messageId));
      await this.resolve(
        entries
          .filter((entry) => lost.has(entry.id))
          .map((entry) => ({
            record: { id: entry.id, sessionId: entry.sessionId } as MessageRecord,
            location: entry.location,
          })),
      );
    }
    return readable;
  }

  /** The directory exists and this instance holds its owner lock: segments may be written. */
  private async ready(): Promise<void> {
    if (this.ownLock) return;
    await this.files.ensureDirectory();
    this.namer.floor(await this.files.list());
    this.ownLock = await OwnerLock.tryAcquire(this.path, ownerLockName(this.instance.id));
    if (!this.ownLock)
      throw new Error(`${ownerLockName(this.instance.id)} is held by another process`);
  }

  private noteWrite(outcome: JournalAppend, records: number): JournalAppend {
    if (outcome.kind === 'written') {
      this.metrics.spoolWrites.inc(records);
      if (this.lastWriteError !== null) {
        this.logger.log(`on-disk spool at ${this.path} writable again`);
        this.lastWriteError = null;
      }
    } else {
      this.metrics.spoolWriteFailures.inc();
      const error = describeError(outcome.error);
      // One line when the disk turns bad (or the reason changes), not one per append.
      if (error !== this.lastWriteError) {
        this.logger.warn(`on-disk spool unavailable at ${this.path}: ${error}`);
        this.lastWriteError = error;
      }
    }
    return outcome;
  }

  private reportSetAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void {
    this.metrics.setAside.inc({ reason }, entries.length);
    for (const entry of entries) {
      this.logger.error(
        `Set aside ${entry.messageId ? `message ${entry.messageId} of session ${entry.sessionId}` : `bytes at ${entry.source}:${entry.offset ?? 0}`}: ${entry.reason}; kept in ${this.path}/set-aside.jsonl`,
      );
    }
  }

  private async removeStaleTempFiles(): Promise<void> {
    for (const name of await this.files.list()) {
      if (!name.startsWith(TEMP_PREFIX)) continue;
      // Another process sharing the directory may be using a young one.
      const age = await this.files.ageMs(name);
      if (age !== undefined && age >= TEMP_FILE_GRACE_MS) await this.files.remove(name);
    }
  }
}

const stored_: DrainStep = { kind: 'stored', refused: [] };
