import { Failpoints } from '../../common/failpoints.js';
import { AdoptionOutages } from '../adoption-outages.js';
import { BadLineKeeper, reportByReason } from '../bad-line-keeper.js';
import { BlockedFiles } from '../blocked-files.js';
import { DrainReader } from '../drain-reader.js';
import { type AdoptionCheck } from '../future-records.js';
import { JournalAdoption } from '../journal-adoption.js';
import { type JournalFiles } from '../journal-files.js';
import { type JournalIndex } from '../journal-index.js';
import { SegmentCache } from '../journal-reader.js';
import { JournalWriter } from '../journal-writer.js';
import { Journal } from '../journal.js';
import { type JournalEvents } from '../journal-events.js';
import { JournalLookup } from '../journal-lookup.js';
import { JournalScrub } from '../journal-scrub.js';
import { JournalWriteBack } from '../journal-write-back.js';
import { OwedRecords } from '../owed-records.js';
import { SegmentWatch, type WriterEvents } from '../segment-loss.js';
import { type SegmentNamer } from '../segment-names.js';
import { type SetAsideLog } from '../set-aside-log.js';
import { type SetAsideEntry } from '../set-aside-entry.js';

// The specs build the journal's parts by hand, as spool.providers.ts wires them in the app:
// these keep their call sites to the arguments a spec cares about, the rest as the app has it.

const READ_CACHE_BYTES = 64 * 1024 * 1024;

/** A blocked list that tells no one and tries a blocked file again at once. */
export function quietBlockedFiles(): BlockedFiles {
  return new BlockedFiles({ blocked: () => undefined, recovered: () => undefined }, 0, 0);
}

/** A JournalWriter with its own SegmentWatch over `files` and `index`. */
export function journalWriter(
  files: JournalFiles,
  index: JournalIndex,
  namer: SegmentNamer,
  segmentBytes: number,
  failpoints: Failpoints = new Failpoints(),
  events?: WriterEvents,
): JournalWriter {
  const watch = new SegmentWatch(files, index);
  return new JournalWriter(files, index, namer, watch, segmentBytes, failpoints, events);
}

/** A Journal and the parts it hands its calls to, for a spec of one part. */
export interface JournalParts {
  journal: Journal;
  owed: OwedRecords;
  writeBack: JournalWriteBack;
  lookup: JournalLookup;
  scrub: JournalScrub;
}

/**
 * A Journal over its parts (OwedRecords, JournalWriteBack, JournalLookup, JournalScrub), with
 * their own read cache and DrainReader (over `blocked`, quiet by default).
 */
export function journalParts(
  files: JournalFiles,
  index: JournalIndex,
  writer: JournalWriter,
  setAsideLog: SetAsideLog,
  events: JournalEvents,
  failpoints: Failpoints = new Failpoints(),
  blocked: BlockedFiles = quietBlockedFiles(),
): JournalParts {
  const cache = new SegmentCache(READ_CACHE_BYTES);
  const reader = new DrainReader(files, index, cache, setAsideLog, blocked, events);
  const owed = new OwedRecords(index, writer, setAsideLog, cache, events);
  const writeBack = new JournalWriteBack(index, reader, owed, events, failpoints);
  const lookup = new JournalLookup(files, index, cache);
  const scrub = new JournalScrub(files, index, writer, setAsideLog, cache, owed);
  return {
    journal: new Journal(writer, owed, writeBack, lookup, scrub),
    owed,
    writeBack,
    lookup,
    scrub,
  };
}

/** A Journal over its parts (see journalParts). */
export function journalOver(...parts: Parameters<typeof journalParts>): Journal {
  return journalParts(...parts).journal;
}

/** A JournalAdoption with its own BadLineKeeper and AdoptionOutages over `blocked`. */
export function journalAdoption(
  files: JournalFiles,
  index: JournalIndex,
  setAsideLog: SetAsideLog,
  ownInstanceId: string,
  onSetAside: (entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt') => void,
  blocked: BlockedFiles,
  keptRecordBytes?: number,
  refuse?: AdoptionCheck,
): JournalAdoption {
  return new JournalAdoption(
    files,
    index,
    ownInstanceId,
    blocked,
    new BadLineKeeper(setAsideLog, index, blocked, reportByReason(onSetAside)),
    new AdoptionOutages(files, blocked),
    keptRecordBytes,
    refuse,
  );
}
