import { Failpoints } from '../common/failpoints.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { RecordingFailpoints } from '../common/testing/recording-failpoints.js';
import { type MessageRecord } from '../message/message-record.js';
import { BlockedFiles } from './blocked-files.js';
import { type Journal } from './journal.js';
import { JournalWriteBack } from './journal-write-back.js';
import { type JournalEvents } from './journal-events.js';
import { type JournaledRecord } from './journaled-record.js';
import { JournalIndex } from './journal-index.js';
import { formatSegmentName, SegmentNamer, SET_ASIDE_LOG } from './segment-names.js';
import { drain, type DrainStep } from './testing/drain.js';
import { journalParts, journalWriter } from './testing/journal-parts.js';
import { SetAsideLog } from './set-aside-log.js';
import { rawField, type SetAsideEntry } from './set-aside-entry.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
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

/**
 * The database as the drain sees it: records every batch; refuses the ids in `refusing` with
 * their reason; fails (`failNext`, `failBatch`) or rejects (`rejectNext`) batches; holds a
 * batch while the test asks.
 */
class FakeStore {
  readonly batches: string[][] = [];
  readonly contents: string[] = [];
  readonly refusing = new Map<string, string>();
  private readonly failures: DrainStep[] = [];
  private readonly rejections: unknown[] = [];
  private readonly holds: Deferred[] = [];
  private failingFrom: { batch: number; error: unknown } | undefined;

  failNext(error: unknown): void {
    this.failures.push({ kind: 'failed', error });
  }

  /** Fails the batch numbered `batch` (1 for the first), and every one after it. */
  failBatch(batch: number, error: unknown): void {
    this.failingFrom = { batch, error };
  }

  rejectNext(error: unknown): void {
    this.rejections.push(error);
  }

  holdNext(): Deferred {
    const gate = deferred();
    this.holds.push(gate);
    return gate;
  }

  readonly store = async (records: MessageRecord[]): Promise<DrainStep> => {
    this.batches.push(records.map((record) => record.id));
    this.contents.push(...records.map((record) => record.content));
    await this.holds.shift()?.promise;
    if (this.rejections.length > 0) throw this.rejections.shift();
    const failure = this.failures.shift();
    if (failure) return failure;
    if (this.failingFrom && this.batches.length >= this.failingFrom.batch) {
      return { kind: 'failed', error: this.failingFrom.error };
    }
    return {
      kind: 'stored',
      refused: records
        .filter((record) => this.refusing.has(record.id))
        .map((record) => ({ record, reason: this.refusing.get(record.id) ?? '' })),
    };
  };
}

describe(JournalWriteBack.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let setAsideLog: SetAsideLog;
  let events: RecordingEvents;
  let database: FakeStore;
  // Journals and releases what the write-back offers, over the same files, index and cache.
  let journal: Journal;
  let sut: JournalWriteBack;
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
    const parts = journalParts(
      files,
      index,
      writer,
      setAsideLog,
      events,
      new Failpoints(),
      blocked,
    );
    journal = parts.journal;
    sut = parts.writeBack;
  }

  const records = [1, 2, 3, 4, 5].map((sequence) => messageRecord('s', sequence));

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    setAsideLog = new SetAsideLog(files);
    events = new RecordingEvents();
    database = new FakeStore();
    now = 0;
    blockedEvents = [];
    build();
  });

  describe('the drain (nextBatch, then settle)', () => {
    it('stores the journal-only records oldest first, a batch at a time, and lets each batch go', async () => {
      await onJournalOnly(journal, records);

      const outcome = await drain(sut, 's', database.store, 2);

      expect(outcome).toEqual({ kind: 'drained', stored: 5, setAside: 0 });
      expect(database.batches).toEqual([['s-1', 's-2'], ['s-3', 's-4'], ['s-5']]);
      expect(events.replays).toEqual([2, 2, 1]);
      expect(index.hasJournalOnly('s')).toBe(false);
      expect(index.liveRecords).toBe(0);
      expect(files.names()).toEqual([]);
      expect(events.removals).toEqual([[FIRST_SEGMENT]]);
    });

    it('stores records kept in memory at start as they are, without reading their lines again', async () => {
      const journaled = await journalRecords(journal, records.slice(0, 2));
      index.addJournalOnly(
        journaled.map(({ record, location }) => ({
          id: record.id,
          sessionId: record.sessionId,
          orderKey: record.orderKey,
          acceptedAt: record.acceptedAt,
          location,
          record: { ...record, content: `${record.content} (kept)` },
        })),
      );
      const readsBefore = files.log.filter((line) => line.startsWith('read')).length;

      expect(await drain(sut, 's', database.store, 10)).toEqual({
        kind: 'drained',
        stored: 2,
        setAside: 0,
      });

      expect(database.contents).toEqual(['message 1 of s (kept)', 'message 2 of s (kept)']);
      expect(files.log.filter((line) => line.startsWith('read')).length).toBe(readsBefore);
    });

    it('lets a batch go only once the store has answered', async () => {
      await onJournalOnly(journal, records.slice(0, 2));
      const gate = database.holdNext();

      const drained = drain(sut, 's', database.store, 1);
      await new Promise((resolve) => setImmediate(resolve));

      expect(database.batches).toEqual([['s-1']]);
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2']);
      gate.resolve();
      expect(await drained).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
    });

    it('drains only the session asked for', async () => {
      await onJournalOnly(journal, [records[0], messageRecord('t', 1)]);

      await drain(sut, 's', database.store, 10);

      expect(database.batches).toEqual([['s-1']]);
      expect(journalOnlyIds(index, 't')).toEqual(['t-1']);
    });

    it('answers drained at once when the session has nothing on disk only', async () => {
      expect(await drain(sut, 's', database.store, 10)).toEqual({
        kind: 'drained',
        stored: 0,
        setAside: 0,
      });
      expect(database.batches).toEqual([]);
    });

    it('sets aside the records the database refused, with their reasons, and lets them go', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 3));
      database.refusing.set('s-2', 'value too long');

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 1 });
      expect(setAsideLines(files)).toEqual([
        {
          at: expect.any(Number),
          reason: 'refused by the database: value too long',
          source: FIRST_SEGMENT,
          offset: journaled[1].location.offset,
          sessionId: 's',
          messageId: 's-2',
          record: records[1],
        },
      ]);
      expect(events.setAsides.map((event) => event.reason)).toEqual(['refused']);
      expect(events.replays).toEqual([2]);
      expect(index.liveRecords).toBe(0);
      expect(index.hasJournalOnly('s')).toBe(false);
    });

    it('reaches the drain-committed failpoint once the store answered, before letting go', async () => {
      const reached: { name: string; owed: number }[] = [];
      const failpoints = new RecordingFailpoints(undefined, (name) =>
        reached.push({ name, owed: index.liveRecords }),
      );
      const namer = new SegmentNamer(INSTANCE, () => 5000);
      const writer = journalWriter(files, index, namer, 1024 * 1024);
      const parts = journalParts(files, index, writer, setAsideLog, events, failpoints);
      journal = parts.journal;
      sut = parts.writeBack;
      await onJournalOnly(journal, records.slice(0, 2));

      await drain(sut, 's', database.store, 10);

      expect(reached).toEqual([{ name: 'spool.drain-committed', owed: 2 }]);
    });

    it('lets go of a refused record once: a record of another session in its segment stays owed', async () => {
      await onJournalOnly(journal, [records[0], messageRecord('t', 9)]);
      database.refusing.set('s-1', 'value too long');

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'drained', stored: 0, setAside: 1 });
      expect(index.liveIn(FIRST_SEGMENT)).toBe(1);
      expect(files.has(FIRST_SEGMENT)).toBe(true);
      expect(await journal.find('t', 't-9')).toEqual(messageRecord('t', 9));
    });

    it('keeps the failed batch and every later one when the store fails', async () => {
      await onJournalOnly(journal, records);
      const down = new Error('connection refused');
      database.failBatch(2, down);

      const outcome = await drain(sut, 's', database.store, 2);

      expect(outcome).toEqual({ kind: 'failed', stored: 2, error: down });
      expect(database.batches).toEqual([
        ['s-1', 's-2'],
        ['s-3', 's-4'],
      ]);
      expect(journalOnlyIds(index, 's')).toEqual(['s-3', 's-4', 's-5']);
      expect(index.liveRecords).toBe(3);
      expect(events.replays).toEqual([2]);
    });

    it('keeps the batch when the store answers failed', async () => {
      await onJournalOnly(journal, records.slice(0, 2));
      const down = new Error('connection refused');
      database.failNext(down);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'failed', stored: 0, error: down });
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2']);
      expect(index.liveRecords).toBe(2);
      expect(events.replays).toEqual([]);
      expect(files.names()).toEqual([FIRST_SEGMENT]);
    });

    it('keeps the batch when the store rejects', async () => {
      await onJournalOnly(journal, records.slice(0, 2));
      const crash = new Error('driver crashed');
      database.rejectNext(crash);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'failed', stored: 0, error: crash });
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2']);
    });

    it('stops, keeping the whole batch, when the refused records cannot be set aside', async () => {
      await onJournalOnly(journal, records.slice(0, 3));
      database.refusing.set('s-2', 'value too long');
      const full = fsError('ENOSPC');
      files.failNext('openForAppend', full);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'failed', stored: 0, error: full });
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2', 's-3']);
      expect(index.liveRecords).toBe(3);
      expect(events.setAsides).toEqual([]);
      expect(events.replays).toEqual([]);
    });

    it('sets aside records that no longer read back, and stores the others', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 3));
      corrupt(files, journaled[1]);
      const { offset, length } = journaled[1].location;
      const line = Buffer.from(files.bytes(FIRST_SEGMENT).subarray(offset, offset + length));

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
      expect(database.batches).toEqual([['s-1', 's-3']]);
      const expected = [
        {
          at: expect.any(Number),
          reason: 'checksum mismatch (torn or corrupted line)',
          source: FIRST_SEGMENT,
          offset,
          sessionId: 's',
          messageId: 's-2',
          // The bytes are kept: the line may be mended by hand.
          ...rawField(line),
        },
      ];
      expect(expected[0].raw).toContain('message 2 of s');
      expect(setAsideLines(files)).toEqual(expected);
      expect(events.setAsides).toEqual([{ entries: expected, reason: 'corrupt' }]);
      expect(index.liveRecords).toBe(0);
      expect(index.hasJournalOnly('s')).toBe(false);
    });

    it('goes on past a batch of nothing but unreadable records, without calling the store', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 3));
      corrupt(files, journaled[0]);
      corrupt(files, journaled[1]);

      const outcome = await drain(sut, 's', database.store, 2);

      expect(outcome).toEqual({ kind: 'drained', stored: 1, setAside: 0 });
      expect(database.batches).toEqual([['s-3']]);
      expect(events.replays).toEqual([0, 1]);
    });

    it('stops, keeping them, when unreadable records cannot be set aside', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 2));
      corrupt(files, journaled[0]);
      const full = fsError('ENOSPC');
      files.failNext('openForAppend', full);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({
        kind: 'failed',
        stored: 0,
        error: new Error(
          'a bad line cannot be set aside: cannot be written: ENOSPC: no space left on device, write',
        ),
      });
      // Order within the session: the good record after the bad line waits for it.
      expect(database.batches).toEqual([]);
      expect(journalOnlyIds(index, 's')).toEqual(['s-1', 's-2']);
      expect(blocked.list()).toEqual([
        {
          source: SET_ASIDE_LOG,
          reason: 'cannot be written: ENOSPC: no space left on device, write',
          records: 1,
          since: 0,
        },
      ]);
    });

    it('sets the bad line aside with its bytes once the log can be written again', async () => {
      const journaled = await onJournalOnly(journal, records.slice(0, 2));
      corrupt(files, journaled[0]);
      files.failNext('openForAppend', fsError('ENOSPC'));
      await drain(sut, 's', database.store, 10);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'drained', stored: 1, setAside: 0 });
      expect(database.batches).toEqual([['s-2']]);
      expect(setAsideLines(files)).toEqual([
        expect.objectContaining({ messageId: 's-1', raw: expect.stringContaining('message 1') }),
      ]);
      expect(blocked.size).toBe(0);
      expect(blockedEvents).toEqual([
        `blocked ${SET_ASIDE_LOG} (1): cannot be written: ENOSPC: no space left on device, write`,
        `recovered ${SET_ASIDE_LOG}`,
      ]);
    });

    it('never reads a line back from bytes of a torn write that the writer cut off since', async () => {
      // A find reads the segment while a torn batch is on it; the writer cuts the torn bytes
      // back off and writes the next batch at the same offsets.
      const [first] = await onJournalOnly(journal, [records[0]]);
      const other = [1, 2, 3].map((sequence) =>
        messageRecord('t', sequence, { content: 'x'.repeat(300) }),
      );
      const truncate = files.holdNext('truncate');
      files.tearNextWrite(2 * first.location.length + 300);
      const torn = journal.append(other);
      await files.reached('truncate', 1);
      expect(await journal.find('s', 's-1')).toEqual(records[0]);
      truncate.resolve();
      expect((await torn).kind).toBe('unavailable');
      const [second] = await onJournalOnly(journal, [records[1]]);

      const outcome = await drain(sut, 's', database.store, 10);

      expect(second.location.offset).toBe(first.location.length);
      expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
      expect(database.batches).toEqual([['s-1', 's-2']]);
      expect(setAsideLines(files)).toEqual([]);
    });

    describe('a segment that cannot be read (an outage, not corruption)', () => {
      /** Three records, one segment each; the second segment fails every read until healed. */
      async function withUnreadableSecond(): Promise<{ second: string; heal: () => void }> {
        build(1);
        const journaled: JournaledRecord[] = [];
        for (const record of records.slice(0, 3))
          journaled.push(...(await onJournalOnly(journal, [record])));
        const second = journaled[1].location.segment;
        expect(new Set(journaled.map(({ location }) => location.segment)).size).toBe(3);
        const data = files.bytes(second);
        await files.remove(second);
        return { second, heal: () => files.put(second, data) };
      }

      it('stores what comes before it, keeps it and all after it owed, and sets nothing aside', async () => {
        const { second } = await withUnreadableSecond();

        const outcome = await drain(sut, 's', database.store, 10);

        const reason = 'segment unreadable: ENOENT: no such file or directory, open';
        expect(outcome).toEqual({
          kind: 'failed',
          stored: 1,
          error: new Error(`${second}: ${reason}; its records stay owed`),
        });
        expect(database.batches).toEqual([['s-1']]);
        expect(journalOnlyIds(index, 's')).toEqual(['s-2', 's-3']);
        expect(index.liveRecords).toBe(2);
        expect(setAsideLines(files)).toEqual([]);
        expect(events.setAsides).toEqual([]);
        expect(blocked.list()).toEqual([{ source: second, reason, records: 1, since: 0 }]);
        expect(blockedEvents).toEqual([`blocked ${second} (1): ${reason}`]);
      });

      it('stores the rest once the segment reads again, telling so once', async () => {
        const { second, heal } = await withUnreadableSecond();
        await drain(sut, 's', database.store, 10);
        await drain(sut, 's', database.store, 10);
        heal();

        const outcome = await drain(sut, 's', database.store, 10);

        expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
        expect(database.batches).toEqual([['s-1'], ['s-2', 's-3']]);
        expect(index.liveRecords).toBe(0);
        expect(blocked.size).toBe(0);
        expect(blockedEvents).toEqual([
          `blocked ${second} (1): segment unreadable: ENOENT: no such file or directory, open`,
          `recovered ${second}`,
        ]);
      });

      it('waits out a backoff before reading it again, doubling up to the cap', async () => {
        build(1, 100);
        const journaled = await onJournalOnly(journal, records.slice(0, 2));
        const first = journaled[0].location.segment;
        const data = files.bytes(first);
        await files.remove(first);
        const reads = () => files.calls('read') + files.calls('readRanges');

        await drain(sut, 's', database.store, 10);
        const afterFirst = reads();
        now = 99;
        const waiting = await drain(sut, 's', database.store, 10);
        expect(reads()).toBe(afterFirst);
        expect(waiting).toEqual({
          kind: 'failed',
          stored: 0,
          error: new Error(
            `${first}: segment unreadable: ENOENT: no such file or directory, open (tried again after a backoff); its records stay owed`,
          ),
        });
        now = 100;
        await drain(sut, 's', database.store, 10);
        expect(reads()).toBeGreaterThan(afterFirst);
        const afterSecond = reads();
        now = 299;
        await drain(sut, 's', database.store, 10);
        expect(reads()).toBe(afterSecond);
        files.put(first, data);
        now = 300;

        const outcome = await drain(sut, 's', database.store, 10);

        expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
        expect(database.batches).toEqual([['s-1', 's-2']]);
      });

      it('stores a record kept in memory from a segment that does not answer', async () => {
        const { second } = await withUnreadableSecond();
        const [entry] = index.journalOnlyOf('s', 2).slice(1);
        entry.record = records[1];

        const outcome = await drain(sut, 's', database.store, 10);

        expect(outcome).toEqual({ kind: 'drained', stored: 3, setAside: 0 });
        expect(database.batches).toEqual([['s-1', 's-2', 's-3']]);
        expect(blocked.has(second)).toBe(false);
        expect(blockedEvents).toEqual([]);
      });
    });

    it('still answers drained when a segment it emptied cannot be deleted', async () => {
      build(1);
      await onJournalOnly(journal, records.slice(0, 1));
      await onJournalOnly(journal, records.slice(1, 2));
      files.failNext('remove', fsError('EIO', 'unlink'));

      const outcome = await drain(sut, 's', database.store, 10);

      expect(outcome).toEqual({ kind: 'drained', stored: 2, setAside: 0 });
      expect(index.liveRecords).toBe(0);
      expect(events.removals).toEqual([[formatSegmentName(5000, 1, INSTANCE)]]);
    });
  });
});
