import { type SetAsideEntry } from './set-aside-entry.js';

// One interface for the journal's parts (OwedRecords, JournalWriteBack, DrainReader), each of
// which takes only the events it reports: the host wires them to logs and metrics once.

/** What the journal tells the outside (logs, metrics) as it works. */
export interface JournalEvents {
  /** Entries were written to the set-aside log. */
  setAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void;
  /** `count` records read back from disk were stored. */
  replayed(count: number): void;
  /** Segments were deleted (their owner may be done with). */
  segmentsRemoved(names: readonly string[]): Promise<void>;
}
