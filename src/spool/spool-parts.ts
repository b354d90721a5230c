import { type Failpoints } from '../common/failpoints.js';
import { type ScribeConfig } from '../config/scribe-config.js';
import { type ScribeInstance } from '../config/scribe-instance.js';
import { type OrderKeyGenerator } from '../message/order-key.js';
import { type MetricsService } from '../metrics/metrics.service.js';
import { BlockedFiles } from './blocked-files.js';
import { DatabaseBinding, type SpoolDatabase } from './database-binding.js';
import { DatabaseIdFile } from './database-id-file.js';
import { refuseFutureRecords } from './future-records.js';
import { JournalAdoption } from './journal-adoption.js';
import { type IrregularEntry, type JournalFiles } from './journal-files.js';
import { JournalIndex } from './journal-index.js';
import { JournalWriter } from './journal-writer.js';
import { Journal } from './journal.js';
import { NodeJournalFiles } from './node-journal-files.js';
import { OwnLock } from './own-lock.js';
import { SegmentNamer, ownerLockName, parseSegmentName } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { SpoolReporter } from './spool-reporter.js';

// A new segment begins once the active one is this big.
const SEGMENT_BYTES = 8 * 1024 * 1024;
// The longest wait before a blocked file (unreadable segment, unusable lock file or set-aside
// log) is tried again; the wait starts at DB_RETRY_INTERVAL_MS and doubles up to this.
const BLOCKED_RETRY_MAX_MS = 30_000;
// A journal line beyond the message's own bytes (MAX_MESSAGE_BYTES): its ids, keys and times.
const RECORD_ENVELOPE_BYTES = 4096;

/** The parts of the journal SpoolService drives, wired to tell one another what they must. */
export interface SpoolParts {
  files: JournalFiles;
  index: JournalIndex;
  binding: DatabaseBinding;
  reporter: SpoolReporter;
  setAsideLog: SetAsideLog;
  blocked: BlockedFiles;
  ownLock: OwnLock;
  writer: JournalWriter;
  adoption: JournalAdoption;
  journal: Journal;
  /** The room one record may need on disk: what readiness asks the file system for. */
  recordBytes: number;
  /** Symlinks, directories and the like in the directory (each warned about once). */
  irregular: () => Promise<IrregularEntry[]>;
}

/**
 * Builds the journal's parts for SpoolService: who reports to whom (logs, metrics), who must
 * hold the owner lock first, and the limits the configuration sets. Kept apart from the
 * service, whose job is the journal's lifecycle and its API.
 */
export function spoolParts(
  config: ScribeConfig,
  instance: ScribeInstance,
  metrics: MetricsService,
  failpoints: Failpoints,
  database: SpoolDatabase,
  clock: OrderKeyGenerator,
): SpoolParts {
  const index = new JournalIndex();
  const files = new NodeJournalFiles(config.spoolDir);
  const binding = new DatabaseBinding(
    config.spoolDir,
    new DatabaseIdFile(config.spoolDir),
    database,
    async () =>
      (await files.list()).filter((name) => {
        const owner = parseSegmentName(name)?.instanceId;
        return owner !== undefined && owner !== instance.id;
      }).length,
  );
  const reporter = new SpoolReporter(files.directory, metrics);
  // Symlinks, directories and the like in the directory: never opened, warned about once.
  const irregular = async () => {
    const entries = await files.irregular().catch(() => []);
    reporter.irregular(entries);
    return entries;
  };
  const setAsideLog = new SetAsideLog(files);
  const blocked = new BlockedFiles(
    {
      blocked: (file) => reporter.blocked(file),
      recovered: (file, downMs) => reporter.unblocked(file, downMs),
    },
    Math.max(1, config.dbRetryIntervalMs),
    Math.max(BLOCKED_RETRY_MAX_MS, config.dbRetryIntervalMs),
  );
  const namer = new SegmentNamer(instance.id);
  const ownLock = new OwnLock(files, namer, ownerLockName(instance.id), async () => {
    await irregular();
  });
  const recordBytes = config.maxMessageBytes + RECORD_ENVELOPE_BYTES;
  const writer = new JournalWriter(files, index, namer, SEGMENT_BYTES, failpoints, {
    beforeNewSegment: () => ownLock.keep(),
    segmentLost: (lost) => reporter.segmentLost(lost),
    rejournaled: (count, segment) => reporter.rejournaled(count, segment),
    segmentFound: (segment, lost) => reporter.segmentFound(segment, lost),
  });
  const adoption = new JournalAdoption(
    files,
    index,
    setAsideLog,
    instance.id,
    (entries, reason = 'corrupt') => reporter.setAside(entries, reason),
    blocked,
    undefined,
    // Judged by the instance's clock, which has moved past every stored time by now: a run
    // whose clock was ahead stored messages that far ahead too, and its journal is no
    // further in the future than they are.
    refuseFutureRecords(config.journalMaxClockAheadMs, () =>
      Math.max(clock.wallNow(), clock.latest),
    ),
  );
  const journal = new Journal(
    files,
    index,
    writer,
    setAsideLog,
    {
      setAside: (entries, reason) => reporter.setAside(entries, reason),
      replayed: (count) => metrics.spoolReplays.inc(count),
      segmentsRemoved: async (names) => {
        for (const name of names) await adoption.segmentRemoved(name);
      },
    },
    failpoints,
    blocked,
  );
  metrics.observeGauge('scribe_spool_messages', () => index.liveRecords);
  metrics.observeGauge('scribe_spool_blocked', () => blocked.size);
  metrics.observeGauge('scribe_spool_bytes', () => index.bytes);
  return {
    files,
    index,
    binding,
    reporter,
    setAsideLog,
    blocked,
    ownLock,
    writer,
    adoption,
    journal,
    recordBytes,
    irregular,
  };
}
