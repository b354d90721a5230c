import { type Failpoints } from '../common/failpoints.js';
import { RecordingFailpoints } from '../common/testing/recording-failpoints.js';
import { type MessageRecord } from '../message/message-record.js';
import { encodeJournalLine } from './journal-codec.js';
import { JournalIndex } from './journal-index.js';
import { type RecordLocation } from './journal-ledger.js';
import { type JournalAppend, JournalWriter } from './journal-writer.js';
import { formatSegmentName, SegmentNamer } from './segment-names.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { journalWriter } from './testing/journal-parts.js';
import { messageRecord } from './testing/records.js';

const INSTANCE = 'aaaaaaaa';
const NOW = 5000;
const ROOMY = 1024 * 1024;

/** The name of this instance's `sequence`-th segment (the clock stands still in these specs). */
function segment(sequence: number): string {
  return formatSegmentName(NOW, sequence, INSTANCE);
}

const records = [0, 1, 2, 3, 4, 5].map((sequence) => messageRecord('s', sequence));
const lines = records.map(encodeJournalLine);
const sizes = lines.map((line) => line.length);

function locationsOf(outcome: JournalAppend): RecordLocation[] {
  if (outcome.kind !== 'written') throw new Error(`not written: ${String(outcome.error)}`);
  return outcome.locations;
}

function errorOf(outcome: JournalAppend): unknown {
  if (outcome.kind !== 'unavailable') throw new Error('written');
  return outcome.error;
}

/** Lets every promise that can settle now settle (to show that one did not). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** What the index was told is owed: resolving `record` at `location`. */
function owed(record: MessageRecord, location: RecordLocation) {
  return { id: record.id, sessionId: record.sessionId, location };
}

describe(JournalWriter.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let sut: JournalWriter;

  function writer(segmentBytes: number, failpoints?: Failpoints): JournalWriter {
    return journalWriter(
      files,
      index,
      new SegmentNamer(INSTANCE, () => NOW),
      segmentBytes,
      failpoints,
    );
  }

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    sut = writer(ROOMY);
  });

  it('writes an append to a new segment, syncs it, and answers where each line lies', async () => {
    const outcome = await sut.append(records.slice(0, 2));

    expect(locationsOf(outcome)).toEqual([
      { segment: segment(0), offset: 0, length: sizes[0] },
      { segment: segment(0), offset: sizes[0], length: sizes[1] },
    ]);
    expect(files.log).toEqual([
      `create ${segment(0)}`,
      `write ${segment(0)}@0+${sizes[0] + sizes[1]}`,
      `sync ${segment(0)}`,
    ]);
    expect(files.bytes(segment(0))).toEqual(Buffer.concat(lines.slice(0, 2)));
    expect(index.liveIn(segment(0))).toBe(2);
    expect(index.isSealed(segment(0))).toBe(false);
    expect(index.liveBySessions()).toEqual([{ sessionId: 's', messages: 2 }]);
    expect(index.bytes).toBe(sizes[0] + sizes[1]);
  });

  it('keeps writing to the same segment, each batch after the last', async () => {
    await sut.append([records[0]]);

    const outcome = await sut.append([records[1]]);

    expect(locationsOf(outcome)).toEqual([
      { segment: segment(0), offset: sizes[0], length: sizes[1] },
    ]);
    expect(files.calls('create')).toBe(1);
    expect(files.bytes(segment(0))).toEqual(Buffer.concat(lines.slice(0, 2)));
  });

  it('counts each record for its own session', async () => {
    await sut.append([messageRecord('a', 1), messageRecord('b', 1), messageRecord('a', 2)]);

    expect(index.liveBySessions()).toEqual([
      { sessionId: 'a', messages: 2 },
      { sessionId: 'b', messages: 1 },
    ]);
    expect(index.oldestAcceptedAt).toBe(messageRecord('a', 1).acceptedAt);
  });

  describe('group commit', () => {
    it('writes the appends made in one tick together, with one sync', async () => {
      const outcomes = await Promise.all([sut.append([records[0]]), sut.append([records[1]])]);

      expect(outcomes.map(locationsOf)).toEqual([
        [{ segment: segment(0), offset: 0, length: sizes[0] }],
        [{ segment: segment(0), offset: sizes[0], length: sizes[1] }],
      ]);
      expect(files.log).toEqual([
        `create ${segment(0)}`,
        `write ${segment(0)}@0+${sizes[0] + sizes[1]}`,
        `sync ${segment(0)}`,
      ]);
    });

    it('writes the appends made during a write and its sync together in the next batch', async () => {
      const gate = files.holdNext('write');
      const first = sut.append([records[0]]);
      await files.reached('write', 1);

      const later = [sut.append([records[1]]), sut.append([records[2], records[3]])];
      await settle();
      expect(files.calls('write')).toBe(1);
      gate.resolve();

      const outcomes = await Promise.all([first, ...later]);
      expect(files.log).toEqual([
        `create ${segment(0)}`,
        `write ${segment(0)}@0+${sizes[0]}`,
        `sync ${segment(0)}`,
        `write ${segment(0)}@${sizes[0]}+${sizes[1] + sizes[2] + sizes[3]}`,
        `sync ${segment(0)}`,
      ]);
      expect(outcomes.map(locationsOf)).toEqual([
        [{ segment: segment(0), offset: 0, length: sizes[0] }],
        [{ segment: segment(0), offset: sizes[0], length: sizes[1] }],
        [
          { segment: segment(0), offset: sizes[0] + sizes[1], length: sizes[2] },
          { segment: segment(0), offset: sizes[0] + sizes[1] + sizes[2], length: sizes[3] },
        ],
      ]);
      expect(files.bytes(segment(0))).toEqual(Buffer.concat(lines.slice(0, 4)));
    });

    it('answers each append only once the sync of its own batch is done', async () => {
      const firstSync = files.holdNext('sync');
      const secondSync = files.holdNext('sync');
      const answered: string[] = [];
      const first = sut.append([records[0]]).then(() => answered.push('first'));
      await files.reached('sync', 1);
      const second = sut.append([records[1]]).then(() => answered.push('second'));

      await settle();
      expect(answered).toEqual([]);
      expect(index.liveRecords).toBe(0);
      firstSync.resolve();
      await first;
      await files.reached('sync', 2);
      await settle();
      expect(answered).toEqual(['first']);
      expect(index.liveRecords).toBe(1);

      secondSync.resolve();
      await second;
      expect(answered).toEqual(['first', 'second']);
      expect(index.liveRecords).toBe(2);
    });
  });

  describe('rotation', () => {
    it('begins a new segment once the active one has reached segmentBytes', async () => {
      sut = writer(sizes[0] + sizes[1]);
      await sut.append(records.slice(0, 2));

      const outcome = await sut.append([records[2]]);

      expect(locationsOf(outcome)).toEqual([{ segment: segment(1), offset: 0, length: sizes[2] }]);
      expect(files.log.slice(3)).toEqual([
        `close ${segment(0)}`,
        `create ${segment(1)}`,
        `write ${segment(1)}@0+${sizes[2]}`,
        `sync ${segment(1)}`,
      ]);
      expect(index.isSealed(segment(0))).toBe(true);
      expect(index.liveIn(segment(0))).toBe(2);
      expect(files.bytes(segment(0))).toEqual(Buffer.concat(lines.slice(0, 2)));
    });

    it('keeps writing to a segment one byte short of segmentBytes, past it', async () => {
      sut = writer(sizes[0] + sizes[1] + 1);
      await sut.append(records.slice(0, 2));

      const outcome = await sut.append([records[2]]);

      expect(locationsOf(outcome)).toEqual([
        { segment: segment(0), offset: sizes[0] + sizes[1], length: sizes[2] },
      ]);
      expect(files.calls('create')).toBe(1);
    });

    it('deletes the full segment at once when it owes nothing any more', async () => {
      sut = writer(sizes[0]);
      const [location] = locationsOf(await sut.append([records[0]]));
      index.resolve([owed(records[0], location)]);

      await sut.append([records[1]]);

      expect(files.names()).toEqual([segment(1)]);
      expect(files.log).toContain(`remove ${segment(0)}`);
      expect(index.isSealed(segment(0))).toBe(false);
      expect(index.bytes).toBe(sizes[1]);
    });
  });

  describe('a failed write', () => {
    it('cuts a torn write back off the segment, so the next batch starts on a line boundary', async () => {
      await sut.append([records[0]]);
      files.tearNextWrite(10);

      const failed = await sut.append([records[1]]);
      const next = await sut.append([records[2]]);

      expect(errorOf(failed)).toMatchObject({ code: 'ENOSPC' });
      expect(files.log.slice(3)).toEqual([
        `write ${segment(0)}@${sizes[0]}+10`,
        `truncate ${segment(0)} ${sizes[0]}`,
        `write ${segment(0)}@${sizes[0]}+${sizes[2]}`,
        `sync ${segment(0)}`,
      ]);
      expect(locationsOf(next)).toEqual([
        { segment: segment(0), offset: sizes[0], length: sizes[2] },
      ]);
      expect(files.bytes(segment(0))).toEqual(Buffer.concat([lines[0], lines[2]]));
      expect(index.liveRecords).toBe(2);
      expect(index.isSealed(segment(0))).toBe(false);
    });

    it('keeps a new segment whose first write tore, and writes it from the start again', async () => {
      files.tearNextWrite(3);

      const failed = await sut.append([records[0]]);
      const next = await sut.append([records[1]]);

      expect(failed.kind).toBe('unavailable');
      expect(locationsOf(next)).toEqual([{ segment: segment(0), offset: 0, length: sizes[1] }]);
      expect(files.names()).toEqual([segment(0)]);
      expect(files.bytes(segment(0))).toEqual(lines[1]);
    });

    it('fails every append of the batch with the error', async () => {
      const firstWrite = files.holdNext('write');
      const secondWrite = files.holdNext('write');
      const first = sut.append([records[0]]);
      await files.reached('write', 1);
      const batch = [sut.append([records[1]]), sut.append([records[2]])];
      firstWrite.resolve();
      await first;
      await files.reached('write', 2);
      const full = fsError('ENOSPC');
      files.failNext('write', full);
      secondWrite.resolve();

      const outcomes = await Promise.all(batch);

      expect(outcomes).toEqual([
        { kind: 'unavailable', error: full },
        { kind: 'unavailable', error: full },
      ]);
      expect(index.liveRecords).toBe(1);
    });

    it('gives the segment up when the torn write cannot be cut back', async () => {
      await sut.append([records[0]]);
      files.tearNextWrite(10);
      files.failNext('truncate');

      const failed = await sut.append([records[1]]);
      const next = await sut.append([records[2]]);

      expect(errorOf(failed)).toMatchObject({ code: 'ENOSPC' });
      expect(index.isSealed(segment(0))).toBe(true);
      expect(files.log).toContain(`close ${segment(0)}`);
      expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[2] }]);
      // The torn bytes stay behind its good line; adoption sets them aside later.
      expect(files.bytes(segment(0))).toEqual(Buffer.concat([lines[0], lines[1].subarray(0, 10)]));
      expect(index.liveIn(segment(0))).toBe(1);
    });

    it('deletes a given-up segment that owes nothing', async () => {
      files.tearNextWrite(10);
      files.failNext('truncate');

      await sut.append([records[0]]);
      await sut.append([records[1]]);

      expect(files.names()).toEqual([segment(1)]);
      expect(index.isSealed(segment(0))).toBe(false);
      expect(index.bytes).toBe(sizes[1]);
    });
  });

  describe('a failed sync', () => {
    it('gives the segment up, cut back to its last synced batch, and begins a new one', async () => {
      await sut.append([records[0]]);
      const eio = fsError('EIO', 'fdatasync');
      files.failNext('sync', eio);

      const failed = await sut.append([records[1]]);
      const next = await sut.append([records[2]]);

      expect(errorOf(failed)).toMatchObject({
        name: 'SyncFailedError',
        message: 'fdatasync failed: EIO: i/o error, fdatasync',
        code: 'EIO',
        cause: eio,
      });
      expect(errorOf(failed)).toBeInstanceOf(Error);
      expect(files.log.slice(3)).toEqual([
        `write ${segment(0)}@${sizes[0]}+${sizes[1]}`,
        `truncate ${segment(0)} ${sizes[0]}`,
        `close ${segment(0)}`,
        `create ${segment(1)}`,
        `write ${segment(1)}@0+${sizes[2]}`,
        `sync ${segment(1)}`,
      ]);
      expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[2] }]);
      expect(files.bytes(segment(0))).toEqual(lines[0]);
      expect(index.isSealed(segment(0))).toBe(true);
      expect(index.liveIn(segment(0))).toBe(1);
      expect(index.liveRecords).toBe(2);
    });

    it('deletes the given-up segment when it owes nothing', async () => {
      files.failNext('sync');

      const failed = await sut.append([records[0]]);

      expect(failed.kind).toBe('unavailable');
      expect(files.names()).toEqual([]);
      expect(index.bytes).toBe(0);
      expect(index.liveRecords).toBe(0);
    });

    it.each([
      ['a string', 'boom', 'fdatasync failed: boom'],
      ['null', null, 'fdatasync failed: null'],
    ])('describes a sync that failed with %s', async (_case, cause, message) => {
      files.failNext('sync', cause);

      const error = errorOf(await sut.append([records[0]]));

      expect(error).toMatchObject({ name: 'SyncFailedError', message, cause });
      expect((error as { code?: unknown }).code).toBeUndefined();
    });
  });

  describe('a failed create', () => {
    it('fails the batch, and the next append tries a new segment', async () => {
      const full = fsError('ENOSPC', 'open');
      files.failNext('create', full);

      const failed = await sut.append([records[0]]);
      const next = await sut.append([records[1]]);

      expect(failed).toEqual({ kind: 'unavailable', error: full });
      expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[1] }]);
      expect(files.log).toEqual([
        `create ${segment(1)}`,
        `write ${segment(1)}@0+${sizes[1]}`,
        `sync ${segment(1)}`,
      ]);
      expect(index.isSealed(segment(0))).toBe(false);
      expect(index.liveRecords).toBe(1);
    });

    it('after a rotation, keeps the full segment and retries the new one', async () => {
      sut = writer(sizes[0]);
      await sut.append([records[0]]);
      files.failNext('create');

      expect((await sut.append([records[1]])).kind).toBe('unavailable');
      const next = await sut.append([records[2]]);

      expect(locationsOf(next)).toEqual([{ segment: segment(2), offset: 0, length: sizes[2] }]);
      expect(index.isSealed(segment(0))).toBe(true);
      expect(files.names()).toEqual([segment(0), segment(2)]);
    });
  });

  it('gives a segment up even when closing it fails', async () => {
    sut = writer(sizes[0]);
    await sut.append([records[0]]);
    files.failNext('close');

    const next = await sut.append([records[1]]);

    expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[1] }]);
    expect(index.isSealed(segment(0))).toBe(true);
  });

  it('forgets a segment that owes nothing even when it cannot be deleted', async () => {
    files.failNext('sync');
    files.failNext('remove');

    await sut.append([records[0]]);
    const next = await sut.append([records[1]]);

    expect(locationsOf(next)[0].segment).toBe(segment(1));
    expect(index.bytes).toBe(sizes[1]);
    expect(files.names()).toEqual([segment(0), segment(1)]);
  });

  describe('release', () => {
    it('deletes sealed segments that owe nothing, and answers which', async () => {
      sut = writer(sizes[0]);
      const [first] = locationsOf(await sut.append([records[0]]));
      const [second] = locationsOf(await sut.append([records[1]]));
      await sut.append([records[2]]);
      index.resolve([owed(records[0], first), owed(records[1], second)]);

      const removed = await sut.release([segment(0), segment(1)]);

      expect(removed).toEqual([segment(0), segment(1)]);
      expect(files.names()).toEqual([segment(2)]);
      expect(index.isSealed(segment(0))).toBe(false);
      expect(index.bytes).toBe(sizes[2]);
    });

    it('keeps a segment that still owes records', async () => {
      sut = writer(sizes[0]);
      await sut.append([records[0]]);
      await sut.append([records[1]]);

      expect(await sut.release([segment(0)])).toEqual([]);
      expect(files.names()).toEqual([segment(0), segment(1)]);
      expect(index.liveIn(segment(0))).toBe(1);
    });

    it('closes and deletes the active segment when it owes nothing; the next append begins another', async () => {
      const [location] = locationsOf(await sut.append([records[0]]));
      index.resolve([owed(records[0], location)]);

      expect(await sut.release([segment(0)])).toEqual([segment(0)]);
      expect(files.log.slice(3)).toEqual([`close ${segment(0)}`, `remove ${segment(0)}`]);

      const next = await sut.append([records[1]]);
      expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[1] }]);
      expect(files.names()).toEqual([segment(1)]);
    });

    it('leaves the active segment alone while it owes records', async () => {
      await sut.append([records[0]]);

      expect(await sut.release([segment(0)])).toEqual([]);
      const next = await sut.append([records[1]]);

      expect(locationsOf(next)[0]).toEqual({
        segment: segment(0),
        offset: sizes[0],
        length: sizes[1],
      });
      expect(files.log).not.toContain(`close ${segment(0)}`);
    });

    it('deletes no segment that is not sealed, nor one it does not know', async () => {
      index.addSegment('journal-000000000000001-000000-bbbbbbbb.jsonl', false);
      files.put('journal-000000000000001-000000-bbbbbbbb.jsonl', '');

      const removed = await sut.release([
        'journal-000000000000001-000000-bbbbbbbb.jsonl',
        'journal-000000000000002-000000-bbbbbbbb.jsonl',
      ]);

      expect(removed).toEqual([]);
      expect(files.calls('remove')).toBe(0);
    });

    it('waits for a write under way, and keeps the segment that write filled again', async () => {
      const [location] = locationsOf(await sut.append([records[0]]));
      const emptied = index.resolve([owed(records[0], location)]);
      const gate = files.holdNext('write');
      const appended = sut.append([records[1]]);
      await files.reached('write', 2);

      const released = sut.release(emptied);
      await settle();
      expect(files.calls('remove')).toBe(0);
      gate.resolve();

      expect(await released).toEqual([]);
      expect(locationsOf(await appended)[0].segment).toBe(segment(0));
      expect(files.names()).toEqual([segment(0)]);
    });

    it('keeps a segment it cannot delete, and goes on with the others', async () => {
      sut = writer(sizes[0]);
      const [first] = locationsOf(await sut.append([records[0]]));
      const [second] = locationsOf(await sut.append([records[1]]));
      await sut.append([records[2]]);
      index.resolve([owed(records[0], first), owed(records[1], second)]);
      files.failNext('remove', fsError('EIO', 'unlink'), segment(0));

      const removed = await sut.release([segment(0), segment(1)]);

      expect(removed).toEqual([segment(1)]);
      expect(files.names()).toEqual([segment(0), segment(2)]);
      expect(index.isSealed(segment(0))).toBe(true);
      expect(index.bytes).toBe(sizes[0] + sizes[2]);
    });
  });

  describe('close', () => {
    it('seals the active segment and keeps its file while it owes records', async () => {
      await sut.append([records[0]]);

      await sut.close();

      expect(files.log.slice(3)).toEqual([`close ${segment(0)}`]);
      expect(index.isSealed(segment(0))).toBe(true);
      expect(files.names()).toEqual([segment(0)]);
    });

    it('deletes the active segment when it owes nothing', async () => {
      const [location] = locationsOf(await sut.append([records[0]]));
      index.resolve([owed(records[0], location)]);

      await sut.close();

      expect(files.names()).toEqual([]);
    });

    it('begins a new segment for an append after it', async () => {
      await sut.append([records[0]]);
      await sut.close();

      const next = await sut.append([records[1]]);

      expect(locationsOf(next)).toEqual([{ segment: segment(1), offset: 0, length: sizes[1] }]);
    });

    it('does nothing without an active segment', async () => {
      await sut.close();

      expect(files.log).toEqual([]);
    });

    it('waits for the write under way', async () => {
      const gate = files.holdNext('sync');
      const appended = sut.append([records[0]]);
      await files.reached('sync', 1);

      const closed = sut.close();
      await settle();
      expect(files.calls('close')).toBe(0);
      gate.resolve();
      await closed;

      expect(locationsOf(await appended)[0].segment).toBe(segment(0));
      expect(files.log).toEqual([
        `create ${segment(0)}`,
        `write ${segment(0)}@0+${sizes[0]}`,
        `sync ${segment(0)}`,
        `close ${segment(0)}`,
      ]);
    });
  });

  it('with the torn-write failpoint armed, reaches it half way through the batch', async () => {
    sut = writer(
      ROOMY,
      new RecordingFailpoints('journal.torn-write', (name) => files.log.push(`failpoint ${name}`)),
    );
    const total = sizes[0] + sizes[1];
    const half = Math.floor(total / 2);

    const outcome = await sut.append(records.slice(0, 2));

    expect(outcome.kind).toBe('written');
    expect(files.log).toEqual([
      `create ${segment(0)}`,
      `write ${segment(0)}@0+${half}`,
      'failpoint journal.torn-write',
      `write ${segment(0)}@${half}+${total - half}`,
      `sync ${segment(0)}`,
    ]);
    expect(files.bytes(segment(0))).toEqual(Buffer.concat(lines.slice(0, 2)));
  });

  it('writes a batch in one go while the torn-write failpoint is not armed', async () => {
    const reached: string[] = [];
    sut = writer(
      ROOMY,
      new RecordingFailpoints('spool.drain-committed', (name) => reached.push(name)),
    );

    await sut.append(records.slice(0, 2));

    expect(files.calls('write')).toBe(1);
    expect(reached).toEqual([]);
  });
});
