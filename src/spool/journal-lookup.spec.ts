import { type MessageRecord } from '../message/message-record.js';
import { JournalIndex } from './journal-index.js';
import { JournalLookup } from './journal-lookup.js';
import { type JournalEvents } from './journal-events.js';
import { type Journal } from './journal.js';
import { formatSegmentName, SegmentNamer } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { drain, type DrainStep } from './testing/drain.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { journalParts, journalWriter } from './testing/journal-parts.js';
import { messageRecord } from './testing/records.js';
import {
  journalRecords,
  onJournalOnly,
  setAsideLines,
  journalOnlyIds,
  corrupt,
} from './testing/journal-probes.js';

const INSTANCE = 'aaaaaaaa';
const FIRST_SEGMENT = formatSegmentName(5000, 0, INSTANCE);

/** Tells no one: these specs read what the files and the index hold. */
const quietEvents: JournalEvents = {
  setAside: () => undefined,
  replayed: () => undefined,
  segmentsRemoved: async () => undefined,
};

/** The database as the drain sees it: stores every batch whole. */
const storeAll = async (): Promise<DrainStep> => ({ kind: 'stored', refused: [] });

describe(JournalLookup.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let setAsideLog: SetAsideLog;
  // Journals and releases what the lookup reads back, over the same files, index and cache.
  let journal: Journal;
  let sut: JournalLookup;

  function build(segmentBytes = 1024 * 1024): void {
    const namer = new SegmentNamer(INSTANCE, () => 5000);
    const writer = journalWriter(files, index, namer, segmentBytes);
    const parts = journalParts(files, index, writer, setAsideLog, quietEvents);
    journal = parts.journal;
    sut = parts.lookup;
  }

  const records = [1, 2, 3, 4, 5].map((sequence) => messageRecord('s', sequence));

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    setAsideLog = new SetAsideLog(files);
    build();
  });

  describe('find', () => {
    it('reads a journal-only record back from disk', async () => {
      const [, second] = await onJournalOnly(journal, records.slice(0, 2));

      expect(await sut.find('s', 's-2')).toEqual(records[1]);
      expect(files.log.at(-1)).toBe(
        `readRanges ${FIRST_SEGMENT} ${second.location.offset}+${second.location.length}`,
      );
    });

    it('reads a sealed segment whole, once, for all the records in it', async () => {
      build(1);
      await onJournalOnly(journal, records.slice(0, 2));
      await journalRecords(journal, records.slice(2, 3));

      expect(await sut.find('s', 's-1')).toEqual(records[0]);
      expect(await sut.find('s', 's-2')).toEqual(records[1]);
      expect(await drain(journal, 's', storeAll, 10)).toMatchObject({ stored: 2 });

      expect(files.log.filter((line) => line.startsWith('read'))).toEqual([
        `read ${FIRST_SEGMENT}`,
      ]);
    });

    it('finds nothing for a record that is not journal-only', async () => {
      await journalRecords(journal, records.slice(0, 1));

      expect(await sut.find('s', 's-1')).toBeUndefined();
      expect(await sut.find('t', 's-1')).toBeUndefined();
      expect(files.calls('read') + files.calls('readRanges')).toBe(0);
    });

    it("rejects while the record's file cannot be read, naming the record and why", async () => {
      await onJournalOnly(journal, records.slice(0, 1));
      files.failNext('readRanges', fsError('EACCES', 'open'));
      files.failNext('read', fsError('EACCES', 'open'));

      await expect(sut.find('s', 's-1')).rejects.toMatchObject({
        name: 'RecordUnreadableError',
        messageId: 's-1',
        reason: expect.stringContaining('EACCES'),
      });
    });

    it('finds nothing for a record that no longer reads back', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 1));
      corrupt(files, journaled[0]);

      expect(await sut.find('s', 's-1')).toBeUndefined();
    });
  });

  describe('readWindow', () => {
    const queued = (record: MessageRecord) => ({ record, status: 'QUEUED' });

    it("reads back the window's journal-only records nearest its cursor, and counts them all", async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 4));

      const window = await sut.readWindow(
        's',
        { direction: 'backward', count: 2, before: records[3].orderKey },
        1e6,
      );

      expect(window).toEqual({
        messages: [queued(records[1]), queued(records[2])],
        horizon: records[0].orderKey,
        beyondCursor: true,
        total: 4,
      });
      expect(files.log.at(-1)).toBe(
        `readRanges ${FIRST_SEGMENT} ${journaled[1].location.offset}+${
          journaled[3].location.offset - journaled[1].location.offset
        }`,
      );
    });

    it('leaves out a line that no longer reads back, names it damaged, and sets nothing aside', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 3));
      corrupt(files, journaled[1]);

      const window = await sut.readWindow('s', { direction: 'forward', count: 10 }, 1e6);

      expect(window.messages).toEqual([queued(records[0]), queued(records[2])]);
      expect(window.unreadable).toEqual({
        id: records[1].id,
        orderKey: records[1].orderKey,
        damaged: true,
      });
      expect(window.total).toBe(3);
      expect(setAsideLines(files)).toEqual([]);
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2', 's-3']);
    });

    it('names the unreadable record nearest the cursor while its file cannot be read', async () => {
      await onJournalOnly(journal, records.slice(0, 3));
      files.failNext('readRanges', fsError('EACCES', 'open'));
      files.failNext('read', fsError('EACCES', 'open'));

      const window = await sut.readWindow('s', { direction: 'forward', count: 10 }, 1e6);

      expect(window).toEqual({
        messages: [],
        beyondCursor: false,
        unreadable: { id: records[0].id, orderKey: records[0].orderKey },
        total: 3,
      });
      expect(setAsideLines(files)).toEqual([]);
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2', 's-3']);
    });

    it('names the newest unreadable record for a backward window', async () => {
      await onJournalOnly(journal, records.slice(0, 3));
      files.failNext('readRanges', fsError('EACCES', 'open'));
      files.failNext('read', fsError('EACCES', 'open'));

      const window = await sut.readWindow('s', { direction: 'backward', count: 10 }, 1e6);

      expect(window.unreadable).toEqual({ id: records[2].id, orderKey: records[2].orderKey });
    });

    it('names the damaged line nearest the cursor, either way', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 3));
      corrupt(files, journaled[0]);
      corrupt(files, journaled[2]);

      const forward = await sut.readWindow('s', { direction: 'forward', count: 10 }, 1e6);
      const backward = await sut.readWindow('s', { direction: 'backward', count: 10 }, 1e6);

      expect(forward.unreadable).toEqual({
        id: 's-1',
        orderKey: records[0].orderKey,
        damaged: true,
      });
      expect(backward.unreadable).toEqual({
        id: 's-3',
        orderKey: records[2].orderKey,
        damaged: true,
      });
      expect(forward.messages).toEqual([queued(records[1])]);
    });

    it('names nothing for a window whose lines all read back', async () => {
      await onJournalOnly(journal, records.slice(0, 2));

      const window = await sut.readWindow('s', { direction: 'forward', count: 10 }, 1e6);

      expect(window).not.toHaveProperty('unreadable');
      expect(window.messages).toHaveLength(2);
    });

    it('reads nothing from disk for a session with no journal-only record', async () => {
      await journalRecords(journal, records.slice(0, 2));

      expect(await sut.readWindow('s', { direction: 'forward', count: 10 }, 1e6)).toEqual({
        messages: [],
        beyondCursor: false,
        total: 0,
      });
      expect(files.calls('read') + files.calls('readRanges')).toBe(0);
    });
  });
});
