import { jest } from '@jest/globals';
import { encodeJournalLine } from './journal-codec.js';
import { JournalIndex } from './journal-index.js';
import { type RecordLocation } from './journal-ledger.js';
import { type JournalAppend, type JournalWriter } from './journal-writer.js';
import { type LostSegment, SegmentLostError } from './segment-loss.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { formatSegmentName, SegmentNamer } from './segment-names.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { journalWriter } from './testing/journal-parts.js';
import { messageRecord } from './testing/records.js';

// The writer when its segment vanishes under it (deleted, or another file put in its place).
const INSTANCE = 'aaaaaaaa';
const NOW = 5000;

function segment(sequence: number): string {
  return formatSegmentName(NOW, sequence, INSTANCE);
}

const records = [0, 1, 2, 3, 4].map((sequence) => messageRecord('s', sequence));
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

describe('JournalWriter with a segment that vanished', () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let lost: LostSegment[];
  let newSegments: number;
  let rejournaled: { count: number; segment: string }[];
  let found: { segment: string; lost: number }[];
  let sut: JournalWriter;

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    lost = [];
    rejournaled = [];
    found = [];
    newSegments = 0;
    sut = journalWriter(
      files,
      index,
      new SegmentNamer(INSTANCE, () => NOW),
      1024 * 1024,
      undefined,
      {
        beforeNewSegment: async () => {
          newSegments += 1;
        },
        segmentLost: (segmentLost) => lost.push(segmentLost),
        rejournaled: (count, name) => rejournaled.push({ count, segment: name }),
        segmentFound: (name, count) => found.push({ segment: name, lost: count }),
      },
    );
  });

  it('answers the batch that finds its segment deleted not written, and says what it took', async () => {
    const [first, second] = locationsOf(await sut.append(records.slice(0, 2)));
    index.addJournalOnly([
      {
        id: records[0].id,
        sessionId: 's',
        orderKey: records[0].orderKey,
        acceptedAt: 0,
        location: first,
      },
    ]);
    await files.remove(segment(0));

    const error = errorOf(await sut.append([records[2]]));

    expect(error).toBeInstanceOf(SegmentLostError);
    expect((error as SegmentLostError).code).toBe('ESEGMENTLOST');
    expect((error as Error).message).toBe(
      `journal segment ${segment(0)} was deleted under the running instance; a new segment begins with the next write`,
    );
    expect(lost).toEqual([{ name: segment(0), what: 'deleted', orphaned: 1, lost: 1 }]);
    expect(index.lostRecords).toBe(1);
    expect(index.orphaned().map((orphan) => orphan.location)).toEqual([
      { segment: segment(0), offset: second.offset, length: 0 },
    ]);
    expect(index.liveRecords).toBe(0);
    expect(files.has(segment(1))).toBe(false);
    await expect(sut.verify()).resolves.toBeUndefined();
    expect(newSegments).toBe(2);
  });

  it('takes a segment found again, the same file at its name, off lostRecords, once', async () => {
    const [first, second] = locationsOf(await sut.append(records.slice(0, 2)));
    const journalOnly = [first, second].map((location, at) => ({
      id: records[at].id,
      sessionId: 's',
      orderKey: records[at].orderKey,
      acceptedAt: 0,
      location,
    }));
    index.addJournalOnly(journalOnly);
    const file = files.takeAway(segment(0));
    await sut.append([records[2]]);
    expect(index.lostRecords).toBe(2);
    await sut.verify();
    expect(found).toEqual([]);

    files.restore(segment(0), file);
    await sut.verify();
    await sut.verify();

    expect(found).toEqual([{ segment: segment(0), lost: 2 }]);
    expect(index.lostRecords).toBe(0);
  });

  it('keeps counting lost a segment whose name finds another file, or one with nothing lost', async () => {
    const [first] = locationsOf(await sut.append([records[0]]));
    index.addJournalOnly([
      {
        id: records[0].id,
        sessionId: 's',
        orderKey: records[0].orderKey,
        acceptedAt: 0,
        location: first,
      },
    ]);
    await files.remove(segment(0));
    await sut.append([records[1]]);
    files.put(segment(0), 'another file');
    await sut.verify();

    expect(found).toEqual([]);
    expect(index.lostRecords).toBe(1);
  });

  it('takes appends while its open segment is intact and has room, not once it vanished', async () => {
    expect(sut.takesAppends).toBe(false);
    await sut.append([records[0]]);
    expect(sut.takesAppends).toBe(true);
    await files.remove(segment(0));
    await sut.append([records[1]]);
    expect(sut.takesAppends).toBe(false);
  });

  it('takes no more appends in an open segment that is full', async () => {
    const small = journalWriter(files, index, new SegmentNamer(INSTANCE, () => NOW), sizes[0] + 1);
    await small.append([records[0]]);
    expect(small.takesAppends).toBe(true);
    await small.append([records[1]]);

    expect(small.takesAppends).toBe(false);
  });

  it('tells a replaced segment from a deleted one', async () => {
    await sut.append([records[0]]);
    files.replace(segment(0), 'someone else');

    expect(errorOf(await sut.append([records[1]]))).toBeInstanceOf(SegmentLostError);
    expect(lost).toEqual([{ name: segment(0), what: 'replaced', orphaned: 1, lost: 0 }]);
  });

  it('journals what memory held again into a new segment, before the next batch', async () => {
    const [, held] = locationsOf(await sut.append(records.slice(0, 2)));
    await files.remove(segment(0));
    await sut.append([records[2]]);

    const [next] = locationsOf(await sut.append([records[3]]));

    expect(files.bytes(segment(1))).toEqual(Buffer.concat([lines[0], lines[1], lines[3]]));
    expect(next).toEqual({ segment: segment(1), offset: sizes[0] + sizes[1], length: sizes[3] });
    expect(index.orphaned()).toEqual([]);
    expect(index.orphanedRecords).toBe(0);
    expect(rejournaled).toEqual([{ count: 2, segment: segment(1) }]);
    expect(index.liveIn(segment(1))).toBe(3);
    // The transcript still knows the old location: resolving by it resolves the new copy.
    expect(index.resolve([{ id: records[1].id, sessionId: 's', location: held }])).toEqual([]);
    expect(index.liveIn(segment(1))).toBe(2);
  });

  it('notices sealed segments of its own gone with the active one, and leaves intact ones', async () => {
    const small = journalWriter(files, index, new SegmentNamer(INSTANCE, () => NOW), 1);
    await small.append([records[0]]);
    await small.append([records[1]]);
    await small.append([records[2]]);
    await files.remove(segment(1));
    await files.remove(segment(2));

    const error = errorOf(await small.append([records[3]])) as SegmentLostError;

    expect(error.segments.map((gone) => gone.name)).toEqual([segment(1), segment(2)]);
    expect(index.liveIn(segment(0))).toBe(1);
    expect(index.orphaned().map((orphan) => orphan.record.id)).toEqual([
      records[1].id,
      records[2].id,
    ]);
  });

  it('keeps the orphans when the new segment cannot be written, and writes them later', async () => {
    await sut.append([records[0]]);
    await files.remove(segment(0));
    await sut.append([records[1]]);
    files.failNext('write', fsError('ENOSPC'));

    await expect(sut.verify()).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(index.orphanedRecords).toBe(1);
    expect(rejournaled).toEqual([]);

    await sut.verify();
    expect(files.bytes(segment(1))).toEqual(lines[0]);
    expect(index.orphanedRecords).toBe(0);
    expect(rejournaled).toEqual([{ count: 1, segment: segment(1) }]);
  });

  it('verify rejects once when the active segment vanished, then begins a new one', async () => {
    await sut.append([records[0]]);
    await files.remove(segment(0));

    await expect(sut.verify()).rejects.toBeInstanceOf(SegmentLostError);
    await expect(sut.verify()).resolves.toBeUndefined();

    expect(files.bytes(segment(1))).toEqual(lines[0]);
    expect(newSegments).toBe(2);
  });

  it('verify does nothing while the active segment is where it was', async () => {
    await sut.append([records[0]]);
    const before = [...files.log];

    await sut.verify();

    expect(files.log).toEqual(before);
    expect(files.calls('identity')).toBe(1);
    expect(newSegments).toBe(1);
  });

  it('checks the segment once per batch, not per record', async () => {
    await sut.append([records[0]]);
    const checks = files.calls('identity');

    await Promise.all([sut.append([records[1]]), sut.append([records[2]])]);

    expect(files.calls('identity')).toBe(checks + 1);
  });

  it('an orphan stored meanwhile is not written again', async () => {
    const [location] = locationsOf(await sut.append([records[0]]));
    await files.remove(segment(0));
    await sut.append([records[1]]);
    index.resolve([{ id: records[0].id, sessionId: 's', location }]);

    await sut.verify();

    expect(files.bytes(segment(1))).toEqual(Buffer.alloc(0));
    expect(rejournaled).toEqual([]);
  });

  it('does not count as journaled again an orphan stored while its new line was being synced', async () => {
    const [location] = locationsOf(await sut.append([records[0]]));
    await files.remove(segment(0));
    await sut.append([records[1]]);
    const sync = files.holdNext('sync');
    const verified = sut.verify();
    await files.reached('sync', 2);
    index.resolve([{ id: records[0].id, sessionId: 's', location }]);
    sync.resolve();

    await verified;

    expect(files.bytes(segment(1))).toEqual(lines[0]);
    expect(rejournaled).toEqual([]);
    expect(index.liveIn(segment(1))).toBe(0);
  });

  it('an orphan that left memory meanwhile is journal-only once journaled again', async () => {
    const [location] = locationsOf(await sut.append([records[0]]));
    await files.remove(segment(0));
    await sut.append([records[1]]);
    index.addJournalOnly([
      { id: records[0].id, sessionId: 's', orderKey: records[0].orderKey, acceptedAt: 0, location },
    ]);
    expect(index.hasJournalOnly('s')).toBe(false);

    await sut.verify();

    expect(index.journalOnlyOf('s', 10).map((entry) => entry.location)).toEqual([
      { segment: segment(1), offset: 0, length: sizes[0] },
    ]);
  });

  it('begins no segment in a SPOOL_DIR that is refused, keeps the orphans, and writes them once it is fixed', async () => {
    await sut.append([records[0]]);
    await files.remove(segment(0));
    await sut.append([records[1]]);
    const refused = new SpoolDirectoryError('/spool', 'a symlink');
    files.failNext('ensureDirectory', refused);

    await expect(sut.verify()).rejects.toBe(refused);
    expect(files.calls('create')).toBe(1);
    expect(index.orphanedRecords).toBe(1);
    expect(index.liveRecords).toBe(0);
    expect(rejournaled).toEqual([]);

    await sut.verify();
    expect(files.bytes(segment(1))).toEqual(lines[0]);
    expect(rejournaled).toEqual([{ count: 1, segment: segment(1) }]);
  });

  it('gives up a segment whose directory was swapped while it was created', async () => {
    await sut.append([records[0]]);
    await files.remove(segment(0));
    await sut.append([records[1]]);
    const create = files.create.bind(files);
    jest.spyOn(files, 'create').mockImplementationOnce(async (name) => {
      const file = await create(name);
      files.replaceDirectory();
      return file;
    });

    const error = await sut.verify().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(SpoolDirectoryError);
    expect((error as Error).message).toContain('/spool is another directory than before');
    expect(files.has(segment(1))).toBe(false);
    expect(files.log).toContain(`close ${segment(1)}`);
    expect(index.orphanedRecords).toBe(1);
    expect(rejournaled).toEqual([]);

    await sut.verify();
    expect(files.bytes(segment(2))).toEqual(lines[0]);
  });

  it('writes nothing once SPOOL_DIR is another name for its directory, and writes on in the same segment when it is put back', async () => {
    locationsOf(await sut.append([records[0]]));
    // A symlink to the original in SPOOL_DIR's place: the segment's name still finds its file.
    const refused = new SpoolDirectoryError('/spool', 'a symlink');
    jest.spyOn(files, 'directoryIdentity').mockResolvedValueOnce({ dev: 1, ino: -1 });
    files.failNext('checkDirectory', refused);

    expect(errorOf(await sut.append([records[1]]))).toBe(refused);
    await expect(sut.verify()).resolves.toBeUndefined();

    expect(files.bytes(segment(0))).toEqual(lines[0]);
    expect(lost).toEqual([]);
    expect(index.liveRecords).toBe(1);
    // The original is back at its name: the same segment takes the next batch, at its end.
    expect(locationsOf(await sut.append([records[2]]))).toEqual([
      { segment: segment(0), offset: sizes[0], length: sizes[2] },
    ]);
    expect(newSegments).toBe(1);
  });

  it('refuses a real directory put in its place that still names the segment file', async () => {
    locationsOf(await sut.append([records[0]]));
    files.replaceDirectory();

    const error = errorOf(await sut.append([records[1]]));
    await expect(sut.verify()).rejects.toBeInstanceOf(SpoolDirectoryError);

    expect(error).toBeInstanceOf(SpoolDirectoryError);
    expect((error as Error).message).toContain('/spool is another directory than before');
    expect(files.bytes(segment(0))).toEqual(lines[0]);
    expect(files.calls('create')).toBe(1);
    expect(index.liveRecords).toBe(1);
  });
});
