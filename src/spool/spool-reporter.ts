import { Logger } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { type MetricsService } from '../metrics/metrics.service.js';
import { type BlockedFile } from './blocked-files.js';
import { type IrregularEntry } from './journal-files.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { type JournalAppend } from './journal-writer.js';
import { type LostSegment } from './segment-loss.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import { type SetAsideEntry } from './set-aside-entry.js';

// What a log line calls each kind of entry that is not a regular file.
const ENTRY_KINDS: Record<IrregularEntry['kind'], string> = {
  symlink: 'a symlink',
  directory: 'a directory',
  other: 'a special file (a FIFO, a socket or a device)',
};

/**
 * What the journal tells operators: metrics for every write and set-aside record, and log lines
 * that stay few however many appends fail (one when the disk turns bad or the reason changes,
 * one when it comes back), while every record set aside is named once, at ERROR.
 */
export class SpoolReporter {
  private lastWriteError: string | null = null;
  // Irregular entries (symlinks, directories) warned about once each.
  private readonly warnedIrregular = new Set<string>();

  constructor(
    private readonly directory: string,
    private readonly metrics: Pick<
      MetricsService,
      'spoolWrites' | 'spoolWriteFailures' | 'setAside'
    >,
    private readonly logger: Pick<Logger, 'log' | 'warn' | 'error'> = new Logger('SpoolService'),
  ) {}

  written(outcome: JournalAppend, records: number): void {
    if (outcome.kind === 'written') {
      this.metrics.spoolWrites.inc(records);
      if (this.lastWriteError !== null) {
        this.logger.log(`on-disk spool at ${this.directory} writable again`);
        this.lastWriteError = null;
      }
      return;
    }
    this.metrics.spoolWriteFailures.inc();
    const error = describeError(outcome.error);
    if (error !== this.lastWriteError) {
      // No retry mends a symlink or a directory of another owner: the operator must act.
      const log = outcome.error instanceof SpoolDirectoryError ? 'error' : 'warn';
      this.logger[log](`on-disk spool unavailable at ${this.directory}: ${error}`);
      this.lastWriteError = error;
    }
  }

  setAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void {
    this.metrics.setAside.inc({ reason }, entries.length);
    for (const entry of entries) {
      const what = entry.messageId
        ? `message ${entry.messageId} of session ${entry.sessionId}`
        : `bytes at ${entry.source}:${entry.offset ?? 0}`;
      this.logger.error(
        `Set aside ${what}: ${entry.reason}; kept in ${this.directory}/${SET_ASIDE_LOG}`,
      );
    }
  }

  /** A segment vanished under the running instance: at ERROR, with what it held. */
  segmentLost(lost: LostSegment): void {
    // Not yet journaled again: that is logged once it is (see rejournaled), if ever.
    const held =
      lost.orphaned > 0
        ? `; ${lost.orphaned} record(s) still in memory are BUFFERED (memory only) until a new segment can take them`
        : '';
    const gone =
      lost.lost > 0
        ? `; ${lost.lost} record(s) only it held are LOST (answered QUEUED, never stored)`
        : '';
    this.logger.error(
      `Journal: segment ${this.directory}/${lost.name} was ${lost.what} under the running instance${held}${gone}`,
    );
  }

  /** Orphans of a vanished segment written and synced again: they are QUEUED once more. */
  rejournaled(count: number, segment: string): void {
    this.logger.log(
      `Journal: ${count} record(s) journaled again into segment ${this.directory}/${segment}`,
    );
  }

  /** A segment given up as lost is the same file at its name again: its records are not lost. */
  segmentFound(segment: string, lost: number): void {
    this.logger.log(
      `Journal: segment ${this.directory}/${segment} is back; its ${lost} record(s) counted LOST are on disk and are stored after the next start`,
    );
  }

  /** Entries that are not regular files: one WARN each, the first time it is seen. */
  irregular(entries: readonly IrregularEntry[]): void {
    for (const entry of entries) {
      const key = `${entry.kind}:${entry.name}`;
      if (this.warnedIrregular.has(key)) continue;
      this.warnedIrregular.add(key);
      this.logger.warn(
        `Journal: ${this.directory}/${entry.name} is ${ENTRY_KINDS[entry.kind]}, not a file: left untouched, and nothing in or behind it is read`,
      );
    }
  }

  /** Once per outage of a file: its records stay owed, and it is tried again with backoff. */
  blocked(file: BlockedFile): void {
    const held = file.records === null ? 'what it holds stays' : `${file.records} record(s) stay`;
    this.logger.error(
      `Journal: ${this.directory}/${file.source} cannot be used: ${file.reason}; ${held} owed and it is tried again with backoff (see spoolStatus.blocked)`,
    );
  }

  unblocked(file: BlockedFile, downMs: number): void {
    this.logger.log(
      `Journal: ${this.directory}/${file.source} usable again after ${downMs} ms; its records replay`,
    );
  }
}
