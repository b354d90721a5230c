import { Failpoints } from '../common/failpoints.js';
import { BlockedFiles } from './blocked-files.js';
import { Journal } from './journal.js';
import { type JournalEvents } from './journal-events.js';
import { JournalIndex } from './journal-index.js';
import { formatSegmentName, SegmentNamer } from './segment-names.js';
import { journalOver, journalWriter } from './testing/journal-parts.js';
import { SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry } from './set-aside-entry.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';
import {
  journalRecords,
  onJournalOnly,
  setAsideLines,
  journalOnlyIds,
} from './testing/journal-probes.js';

const INSTANCE = 'aaaaaaaa';
const FIRST_SEGMENT = formatSegmentName(5000, 0, INSTANCE);

/** What the journal told the outside. */
class RecordingEvents implements JournalEvents {
  readonly setAsides: { entries: readonly SetAsideEntry[]; reason: 'refused' | 'corrupt' }[] = [];
  readonly replays: number[] = [];
  readonly removals: (readonly string[])[] = [];

  setAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void {
    this.setAsides.push({ entries, reason });
  }

  replayed(count: number): void {
    this.replays.push(count);
  }

  async segmentsRemoved(names: readonly string[]): Promise<void> {
    this.removals.push(names);
  }
}

describe(Journal.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let setAsideLog: SetAsideLog;
  let events: RecordingEvents;
  let sut: Journal;
  let now: number;
  let blocked: BlockedFiles;
  let blockedEvents: string[];

  function build(segmentBytes = 1024 * 1024, backoffMs = 0): void {
    const namer = new SegmentNamer(INSTANCE, () => 5000);
    const writer = journalWriter(files, index, namer, segmentBytes);
    blocked = new BlockedFiles(
      {
        blocked: (file) =>
          blockedEvents.push(`blocked ${file.source} (${file.records}): ${file.reason}`),
        recovered: (file) => blockedEvents.push(`recovered ${file.source}`),
      },
      backoffMs,
      4 * backoffMs,
      () => now,
    );
    sut = journalOver(files, index, writer, setAsideLog, events, new Failpoints(), blocked);
  }

  const records = [1, 2, 3, 4, 5].map((sequence) => messageRecord('s', sequence));

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    setAsideLog = new SetAsideLog(files);
    events = new RecordingEvents();
    now = 0;
    blockedEvents = [];
    build();
  });

  it('appends through the writer: synced, and counted as owed', async () => {
    const outcome = await sut.append(records.slice(0, 2));

    expect(outcome.kind).toBe('written');
    expect(files.log).toContain(`sync ${FIRST_SEGMENT}`);
    expect(index.liveRecords).toBe(2);
  });

  describe('release', () => {
    it('makes journaled records journal-only, for the drain and find to read back', async () => {
      const journaled = await journalRecords(sut, records.slice(0, 2));

      await sut.release(journaled);

      expect(index.journalOnlyOf('s', 10)).toEqual(
        journaled.map(({ record, location }) => ({
          id: record.id,
          sessionId: 's',
          orderKey: record.orderKey,
          acceptedAt: record.acceptedAt,
          location,
        })),
      );
      expect(await sut.find('s', records[1].id)).toEqual(records[1]);
    });

    it('owes a second copy of a message that only the disk holds nothing', async () => {
      const [first] = await journalRecords(sut, records.slice(0, 1));
      await sut.release([first]);
      const [copy] = await journalRecords(sut, records.slice(0, 1));

      await sut.release([copy]);

      expect(index.journalOnlyOf('s', 10).map((entry) => entry.location)).toEqual([first.location]);
      expect(index.liveIn(first.location.segment)).toBe(1);
      expect(index.liveRecords).toBe(1);
    });
  });

  describe('resolve', () => {
    it('owes stored records no more, and deletes a segment left owing nothing', async () => {
      const journaled = await journalRecords(sut, records.slice(0, 2));

      await sut.resolve(journaled.slice(0, 1));
      expect(index.liveRecords).toBe(1);
      expect(events.removals).toEqual([]);

      await sut.resolve(journaled.slice(1));
      expect(index.liveRecords).toBe(0);
      expect(files.names()).toEqual([]);
      expect(events.removals).toEqual([[FIRST_SEGMENT]]);
    });

    it('lets go of journal-only entries it resolves', async () => {
      const journaled = await onJournalOnly(sut, records.slice(0, 2));

      await sut.resolve(journaled.slice(0, 1));

      expect(journalOnlyIds(index, 's')).toEqual([records[1].id]);
    });
  });

  describe('setAside', () => {
    it('keeps refused records in the set-aside log with their reasons, then lets them go', async () => {
      const [first, second] = await journalRecords(sut, records.slice(0, 2));
      const fresh = records[2];

      await sut.setAside([
        { ...first, reason: 'too long' },
        { record: fresh, location: null, reason: 'bad role' },
      ]);

      const expected = [
        {
          at: expect.any(Number),
          reason: 'refused by the database: too long',
          source: FIRST_SEGMENT,
          offset: first.location.offset,
          sessionId: 's',
          messageId: first.record.id,
          record: first.record,
        },
        {
          at: expect.any(Number),
          reason: 'refused by the database: bad role',
          source: 'memory',
          sessionId: 's',
          messageId: fresh.id,
          record: fresh,
        },
      ];
      expect(setAsideLines(files)).toEqual(expected);
      expect(Object.keys(setAsideLines(files)[1] as object)).not.toContain('offset');
      expect(events.setAsides).toEqual([{ entries: expected, reason: 'refused' }]);
      expect(index.liveBySessions()).toEqual([{ sessionId: 's', messages: 1 }]);
      expect(index.liveIn(second.location.segment)).toBe(1);
    });

    it('sets aside a record at offset 0 with its offset', async () => {
      const [first] = await journalRecords(sut, records.slice(0, 1));

      await sut.setAside([{ ...first, reason: 'no' }]);

      expect(setAsideLines(files)).toEqual([expect.objectContaining({ offset: 0 })]);
      expect(events.removals).toEqual([[FIRST_SEGMENT]]);
    });

    it('does nothing for no records', async () => {
      await sut.setAside([]);

      expect(files.log).toEqual([]);
      expect(events.setAsides).toEqual([]);
    });

    it('rejects, and keeps them owed, when the log cannot be written', async () => {
      const journaled = await onJournalOnly(sut, records.slice(0, 1));
      const full = fsError('ENOSPC');
      files.failNext('openForAppend', full);

      await expect(sut.setAside([{ ...journaled[0], reason: 'no' }])).rejects.toBe(full);

      expect(events.setAsides).toEqual([]);
      expect(index.liveRecords).toBe(1);
      expect(journalOnlyIds(index, 's')).toEqual([records[0].id]);
    });
  });

  describe('forget', () => {
    it("lets go of the session's journal-only records accepted at or before the bound, and says how many", async () => {
      await onJournalOnly(sut, [...records, messageRecord('t', 1)]);

      // records[2] was accepted exactly at the bound.
      expect(await sut.forget('s', records[2].acceptedAt)).toEqual({
        count: 3,
        newestAcceptedAt: records[2].acceptedAt,
      });

      expect(journalOnlyIds(index, 's')).toEqual(['s-4', 's-5']);
      expect(journalOnlyIds(index, 't')).toEqual(['t-1']);
      expect(index.liveBySessions()).toEqual([
        { sessionId: 's', messages: 2 },
        { sessionId: 't', messages: 1 },
      ]);
      expect(files.names()).toEqual([FIRST_SEGMENT]);
      expect(events.removals).toEqual([]);
    });

    it('forgets all of them by default', async () => {
      await onJournalOnly(sut, [...records, messageRecord('t', 1)]);

      expect(await sut.forget('s')).toEqual({ count: 5, newestAcceptedAt: records[4].acceptedAt });

      expect(index.hasJournalOnly('s')).toBe(false);
      expect(journalOnlyIds(index, 't')).toEqual(['t-1']);
      expect(index.liveRecords).toBe(1);
    });

    it('forgets none accepted after the bound', async () => {
      await onJournalOnly(sut, records.slice(1, 3));

      expect(await sut.forget('s', records[0].acceptedAt)).toEqual({ count: 0 });

      expect(journalOnlyIds(index, 's')).toEqual(['s-2', 's-3']);
      expect(index.liveRecords).toBe(2);
    });

    it('leaves the records memory still holds owed: only the journal-only ones go', async () => {
      await journalRecords(sut, records.slice(0, 2));
      await onJournalOnly(sut, records.slice(2, 4));

      expect((await sut.forget('s')).count).toBe(2);

      expect(index.liveRecords).toBe(2);
      expect(files.names()).toEqual([FIRST_SEGMENT]);
    });

    it('removes a segment whose records it let go of all', async () => {
      await onJournalOnly(sut, records.slice(0, 3));

      expect((await sut.forget('s')).count).toBe(3);

      expect(index.liveRecords).toBe(0);
      expect(files.names()).toEqual([]);
      expect(events.removals).toEqual([[FIRST_SEGMENT]]);
    });

    it('forgets nothing, and touches no file, for a session with nothing on disk only', async () => {
      await onJournalOnly(sut, records.slice(0, 1));
      const calls = files.log.length;

      expect((await sut.forget('t')).count).toBe(0);

      expect(files.log).toHaveLength(calls);
      expect(index.liveRecords).toBe(1);
    });
  });
});
