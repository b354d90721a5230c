import { type Provider } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { BlockedFiles } from './blocked-files.js';
import { DatabaseBinding } from './database-binding.js';
import { SpoolDatabase } from './database-binding-rules.js';
import { DatabaseIdFile } from './database-id-file.js';
import { type JournalFiles } from './journal-files.js';
import { JournalIndex } from './journal-index.js';
import { NodeJournalFiles } from './node-journal-files.js';
import { journalProviders } from './journal.providers.js';
import { OwnLock } from './own-lock.js';
import { SegmentNamer, ownerLockName, parseSegmentName } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { SpoolGauges } from './spool-gauges.js';
import { SpoolReporter } from './spool-reporter.js';
import {
  JOURNAL_FILES,
  SPOOL_DIRECTORY,
  SPOOL_IRREGULAR,
  SPOOL_RECORD_BYTES,
  type IrregularEntries,
} from './spool.tokens.js';

// The longest wait before a blocked file (unreadable segment, unusable lock file or set-aside
// log) is tried again; the wait starts at DB_RETRY_INTERVAL_MS and doubles up to this.
const BLOCKED_RETRY_MAX_MS = 30_000;
// A journal line beyond the message's own bytes (MAX_MESSAGE_BYTES): its ids, keys and times.
const RECORD_ENVELOPE_BYTES = 4096;

/**
 * The journal's parts, one instance each per app, wired to tell one another what they must:
 * who reports to whom (logs, metrics), who must hold the owner lock first, and the limits the
 * configuration sets. Each is a provider, so that a test or a host can override any of them.
 */
export const spoolProviders: Provider[] = [
  {
    provide: SPOOL_DIRECTORY,
    inject: [ScribeConfig],
    useFactory: (config: ScribeConfig): string => config.spoolDir,
  },
  {
    provide: SPOOL_RECORD_BYTES,
    inject: [ScribeConfig],
    useFactory: (config: ScribeConfig): number => config.maxMessageBytes + RECORD_ENVELOPE_BYTES,
  },
  { provide: JournalIndex, useFactory: () => new JournalIndex() },
  {
    provide: JOURNAL_FILES,
    inject: [SPOOL_DIRECTORY],
    useFactory: (directory: string): JournalFiles => new NodeJournalFiles(directory),
  },
  {
    provide: DatabaseIdFile,
    inject: [SPOOL_DIRECTORY],
    useFactory: (directory: string) => new DatabaseIdFile(directory),
  },
  {
    provide: DatabaseBinding,
    inject: [SPOOL_DIRECTORY, DatabaseIdFile, SpoolDatabase, JOURNAL_FILES, ScribeInstance],
    useFactory: (
      directory: string,
      idFile: DatabaseIdFile,
      database: SpoolDatabase,
      files: JournalFiles,
      instance: ScribeInstance,
    ) =>
      new DatabaseBinding(
        directory,
        idFile,
        database,
        // Segments of other instances: a spool that has some was used before the binding.
        async () =>
          (await files.list()).filter((name) => {
            const owner = parseSegmentName(name)?.instanceId;
            return owner !== undefined && owner !== instance.id;
          }).length,
      ),
  },
  {
    provide: SpoolReporter,
    inject: [JOURNAL_FILES, MetricsService],
    useFactory: (files: JournalFiles, metrics: MetricsService) =>
      new SpoolReporter(files.directory, metrics),
  },
  {
    // Symlinks, directories and the like in the directory: never opened, warned about once.
    provide: SPOOL_IRREGULAR,
    inject: [JOURNAL_FILES, SpoolReporter],
    useFactory:
      (files: JournalFiles, reporter: SpoolReporter): IrregularEntries =>
      async () => {
        const entries = await files.irregular().catch(() => []);
        reporter.irregular(entries);
        return entries;
      },
  },
  {
    provide: SetAsideLog,
    inject: [JOURNAL_FILES],
    useFactory: (files: JournalFiles) => new SetAsideLog(files),
  },
  {
    provide: BlockedFiles,
    inject: [SpoolReporter, ScribeConfig],
    useFactory: (reporter: SpoolReporter, config: ScribeConfig) =>
      new BlockedFiles(
        {
          blocked: (file) => reporter.blocked(file),
          recovered: (file, downMs) => reporter.unblocked(file, downMs),
        },
        Math.max(1, config.dbRetryIntervalMs),
        Math.max(BLOCKED_RETRY_MAX_MS, config.dbRetryIntervalMs),
      ),
  },
  {
    provide: SegmentNamer,
    inject: [ScribeInstance],
    useFactory: (instance: ScribeInstance) => new SegmentNamer(instance.id),
  },
  {
    provide: OwnLock,
    inject: [JOURNAL_FILES, SegmentNamer, ScribeInstance, SPOOL_IRREGULAR],
    useFactory: (
      files: JournalFiles,
      namer: SegmentNamer,
      instance: ScribeInstance,
      irregular: IrregularEntries,
    ) =>
      new OwnLock(files, namer, ownerLockName(instance.id), async () => {
        await irregular();
      }),
  },
  ...journalProviders,
  SpoolGauges,
];
