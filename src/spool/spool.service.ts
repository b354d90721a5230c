import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type MessageRecord } from '../message/message-record.js';
import {
  OWNED_SPOOL_REASONS,
  SpoolDirectory,
  type SpoolEntry,
  type SpoolReason,
  type SpoolStats,
} from './spool-directory.js';

/** What the admin view shows of the spool. */
export interface SpoolStatusView {
  path: string;
  writable: boolean;
  error: string | null;
  files: number;
  badFiles: number;
  oldestFileAgeMs: number | null;
  sessions: SpoolStats['bySession'];
}

/** The on-disk spool of messages that could not wait in memory, wired to logs and metrics. */
@Injectable()
export class SpoolService implements OnModuleInit {
  private readonly logger = new Logger(SpoolService.name);
  private readonly directory: SpoolDirectory;

  constructor(config: ScribeConfig, metrics: MetricsService) {
    this.directory = new SpoolDirectory(config.spoolDir, {
      badFile: (fileName, error) => {
        metrics.spoolBadFiles.inc();
        this.logger.error(
          `Spool file ${fileName} is unreadable (${error}); set aside as ${fileName}.bad`,
        );
      },
      written: (reason) => metrics.spoolWrites.inc({ reason }),
      replayed: (count) => metrics.spoolReplays.inc(count),
    });
    metrics.observeGauge('scribe_spool_files', async () => (await this.stats()).files);
  }

  get path(): string {
    return this.directory.path;
  }

  // The service starts even when the spool is unusable: appends still work, evictions drop.
  async onModuleInit(): Promise<void> {
    const { usable, error } = await this.directory.init();
    if (!usable) {
      this.logger.warn(
        `on-disk spool unavailable at ${this.path}: ${error}; messages evicted past the pending cap will be dropped`,
      );
    }
  }

  write(record: MessageRecord, reason: SpoolReason): Promise<string> {
    return this.directory.write(record, reason);
  }

  /**
   * Replays a session's owned files in drop order, `batchSize` records per store call, deleting
   * each file once stored and keeping the rest on the first failure. Pass `entries` when they
   * were listed already (boot replay lists the directory once for every session).
   */
  async drainSession(
    sessionId: string,
    store: (records: MessageRecord[]) => Promise<void>,
    batchSize: number,
    entries?: SpoolEntry[],
  ): Promise<{ replayed: number; remaining: number; error?: unknown }> {
    const owned =
      entries ?? (await this.directory.list({ sessionId, reasons: OWNED_SPOOL_REASONS }));
    return this.directory.drainEntries(owned, store, batchSize);
  }

  /** Every file the transcript owns, in drop order. */
  listOwned(): Promise<SpoolEntry[]> {
    return this.directory.list({ reasons: OWNED_SPOOL_REASONS });
  }

  async stats(): Promise<SpoolStats> {
    try {
      return await this.directory.stats();
    } catch {
      return { files: 0, bySession: [], oldestFileAgeMs: null, badFiles: 0 };
    }
  }

  async status(): Promise<SpoolStatusView> {
    let error: string | null = null;
    try {
      await this.checkWritable();
    } catch (cause) {
      error = cause instanceof Error ? cause.message : String(cause);
    }
    const stats = await this.stats();
    return {
      path: this.path,
      writable: error === null,
      error,
      files: stats.files,
      badFiles: stats.badFiles,
      oldestFileAgeMs: stats.oldestFileAgeMs,
      sessions: stats.bySession,
    };
  }

  checkWritable(): Promise<void> {
    return this.directory.checkWritable();
  }
}
