import { type MessageRecord } from '../../message/message-record.js';
import { type Journal } from '../journal.js';
import { type JournalIndex } from '../journal-index.js';
import { type JournaledRecord } from '../journaled-record.js';
import { SET_ASIDE_LOG } from '../segment-names.js';
import { type FakeJournalFiles } from './fake-journal-files.js';

// What the journal specs do to and read from a journal under test, in one place.

/** Journals `records`, with the place each line landed; throws if the journal refused them. */
export async function journalRecords(
  journal: Journal,
  records: MessageRecord[],
): Promise<JournaledRecord[]> {
  const outcome = await journal.append(records);
  if (outcome.kind !== 'written') throw new Error('not journaled');
  return records.map((record, position) => ({ record, location: outcome.locations[position] }));
}

/** Journals `records` and lets them leave memory: only the disk holds them now. */
export async function onJournalOnly(
  journal: Journal,
  records: MessageRecord[],
): Promise<JournaledRecord[]> {
  const journaled = await journalRecords(journal, records);
  await journal.release(journaled);
  return journaled;
}

/** The set-aside log's entries, parsed; none while the log does not exist. */
export function setAsideLines(files: FakeJournalFiles): unknown[] {
  if (!files.has(SET_ASIDE_LOG)) return [];
  return files
    .text(SET_ASIDE_LOG)
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line): unknown => JSON.parse(line));
}

/** The ids the index holds for `sessionId` on disk only. */
export function journalOnlyIds(index: JournalIndex, sessionId: string): string[] {
  return index.journalOnlyOf(sessionId, 100).map((entry) => entry.id);
}

/** Flips a byte inside the journal line of `journaled`, keeping its length. */
export function corrupt(files: FakeJournalFiles, { location }: JournaledRecord): void {
  files.bytes(location.segment)[location.offset + 40] ^= 0x01;
}
