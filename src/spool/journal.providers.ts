import { type Provider } from '@nestjs/common';
import { Failpoints } from '../common/failpoints.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AdoptionOutages } from './adoption-outages.js';
import { BadLineKeeper, reportByReason } from './bad-line-keeper.js';
import { BlockedFiles } from './blocked-files.js';
import { DrainReader } from './drain-reader.js';
import { refuseFutureRecords } from './future-records.js';
import { JournalAdoption } from './journal-adoption.js';
import { type JournalFiles } from './journal-files.js';
import { JournalIndex } from './journal-index.js';
import { JournalLookup } from './journal-lookup.js';
import { SegmentCache } from './journal-reader.js';
import { JournalScrub } from './journal-scrub.js';
import { JournalWriteBack } from './journal-write-back.js';
import { JournalWriter } from './journal-writer.js';
import { Journal } from './journal.js';
import { OwedRecords } from './owed-records.js';
import { OwnLock } from './own-lock.js';
import { SegmentWatch } from './segment-loss.js';
import { SegmentNamer } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { SpoolReporter } from './spool-reporter.js';
import { JOURNAL_FILES } from './spool.tokens.js';

// A new segment begins once the active one is this big.
const SEGMENT_BYTES = 8 * 1024 * 1024;
// Whole segments kept in memory for reading back (see SegmentCache).
const READ_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * The journal and its working parts (writer, adoption, drain reader, what is owed, write-back,
 * lookup, scrub, and what they share), each its own provider over the spool's files, index
 * and blocked list (see spoolProviders), so a test or a host can override any one of them.
 */
export const journalProviders: Provider[] = [
  {
    provide: SegmentWatch,
    inject: [JOURNAL_FILES, JournalIndex],
    useFactory: (files: JournalFiles, index: JournalIndex) => new SegmentWatch(files, index),
  },
  {
    provide: JournalWriter,
    inject: [
      JOURNAL_FILES,
      JournalIndex,
      SegmentNamer,
      SegmentWatch,
      Failpoints,
      OwnLock,
      SpoolReporter,
    ],
    useFactory: (
      files: JournalFiles,
      index: JournalIndex,
      namer: SegmentNamer,
      watch: SegmentWatch,
      failpoints: Failpoints,
      ownLock: OwnLock,
      reporter: SpoolReporter,
    ) =>
      new JournalWriter(files, index, namer, watch, SEGMENT_BYTES, failpoints, {
        beforeNewSegment: () => ownLock.keep(),
        segmentLost: (lost) => reporter.segmentLost(lost),
        rejournaled: (count, segment) => reporter.rejournaled(count, segment),
        segmentFound: (segment, lost) => reporter.segmentFound(segment, lost),
      }),
  },
  {
    provide: BadLineKeeper,
    inject: [SetAsideLog, JournalIndex, BlockedFiles, SpoolReporter],
    useFactory: (
      setAsideLog: SetAsideLog,
      index: JournalIndex,
      blocked: BlockedFiles,
      reporter: SpoolReporter,
    ) =>
      new BadLineKeeper(
        setAsideLog,
        index,
        blocked,
        reportByReason((entries, reason) => reporter.setAside(entries, reason)),
      ),
  },
  {
    provide: AdoptionOutages,
    inject: [JOURNAL_FILES, BlockedFiles],
    useFactory: (files: JournalFiles, blocked: BlockedFiles) => new AdoptionOutages(files, blocked),
  },
  {
    provide: JournalAdoption,
    inject: [
      JOURNAL_FILES,
      JournalIndex,
      ScribeInstance,
      BlockedFiles,
      BadLineKeeper,
      AdoptionOutages,
      ScribeConfig,
      OrderKeyGenerator,
    ],
    useFactory: (
      files: JournalFiles,
      index: JournalIndex,
      instance: ScribeInstance,
      blocked: BlockedFiles,
      badLines: BadLineKeeper,
      outages: AdoptionOutages,
      config: ScribeConfig,
      clock: OrderKeyGenerator,
    ) =>
      new JournalAdoption(
        files,
        index,
        instance.id,
        blocked,
        badLines,
        outages,
        undefined,
        // Judged by the instance's clock, which has moved past every stored time by now: a run
        // whose clock was ahead stored messages that far ahead too, and its journal is no
        // further in the future than they are.
        refuseFutureRecords(config.journalMaxClockAheadMs, () =>
          Math.max(clock.wallNow(), clock.latest),
        ),
      ),
  },
  { provide: SegmentCache, useFactory: () => new SegmentCache(READ_CACHE_BYTES) },
  {
    provide: DrainReader,
    inject: [JOURNAL_FILES, JournalIndex, SegmentCache, SetAsideLog, BlockedFiles, SpoolReporter],
    useFactory: (
      files: JournalFiles,
      index: JournalIndex,
      cache: SegmentCache,
      setAsideLog: SetAsideLog,
      blocked: BlockedFiles,
      reporter: SpoolReporter,
    ) =>
      new DrainReader(files, index, cache, setAsideLog, blocked, {
        setAside: (entries, reason) => reporter.setAside(entries, reason),
      }),
  },
  {
    provide: OwedRecords,
    inject: [
      JournalIndex,
      JournalWriter,
      SetAsideLog,
      SegmentCache,
      SpoolReporter,
      JournalAdoption,
    ],
    useFactory: (
      index: JournalIndex,
      writer: JournalWriter,
      setAsideLog: SetAsideLog,
      cache: SegmentCache,
      reporter: SpoolReporter,
      adoption: JournalAdoption,
    ) =>
      new OwedRecords(index, writer, setAsideLog, cache, {
        setAside: (entries, reason) => reporter.setAside(entries, reason),
        segmentsRemoved: async (names) => {
          for (const name of names) await adoption.segmentRemoved(name);
        },
      }),
  },
  {
    provide: JournalWriteBack,
    inject: [JournalIndex, DrainReader, OwedRecords, MetricsService, Failpoints],
    useFactory: (
      index: JournalIndex,
      reader: DrainReader,
      owed: OwedRecords,
      metrics: MetricsService,
      failpoints: Failpoints,
    ) =>
      new JournalWriteBack(
        index,
        reader,
        owed,
        { replayed: (count) => metrics.spoolReplays.inc(count) },
        failpoints,
      ),
  },
  {
    provide: JournalLookup,
    inject: [JOURNAL_FILES, JournalIndex, SegmentCache],
    useFactory: (files: JournalFiles, index: JournalIndex, cache: SegmentCache) =>
      new JournalLookup(files, index, cache),
  },
  {
    provide: JournalScrub,
    inject: [JOURNAL_FILES, JournalIndex, JournalWriter, SetAsideLog, SegmentCache, OwedRecords],
    useFactory: (
      files: JournalFiles,
      index: JournalIndex,
      writer: JournalWriter,
      setAsideLog: SetAsideLog,
      cache: SegmentCache,
      owed: OwedRecords,
    ) => new JournalScrub(files, index, writer, setAsideLog, cache, owed),
  },
  {
    provide: Journal,
    inject: [JournalWriter, OwedRecords, JournalWriteBack, JournalLookup, JournalScrub],
    useFactory: (
      writer: JournalWriter,
      owed: OwedRecords,
      writeBack: JournalWriteBack,
      lookup: JournalLookup,
      scrubber: JournalScrub,
    ) => new Journal(writer, owed, writeBack, lookup, scrubber),
  },
];
