import { type MessageRecord } from '../message/message-record.js';
import { encodeJournalLine } from './journal-codec.js';
import { type DiskEntry } from './journal-only-list.js';
import { readBack, SegmentCache } from './journal-reader.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';

const A = 'journal-000000000001000-000000-aaaaaaaa.jsonl';
const B = 'journal-000000000002000-000000-aaaaaaaa.jsonl';
// Ranges of one segment at most this far apart are read together.
const MERGE_GAP = 64 * 1024;

/** Lays out a segment: records as journal lines, numbers as that many filler bytes. */
function layout(files: FakeJournalFiles, name: string, parts: (MessageRecord | number)[]) {
  const entries: DiskEntry[] = [];
  const buffers: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const data = typeof part === 'number' ? Buffer.alloc(part, 'x') : encodeJournalLine(part);
    if (typeof part !== 'number') {
      entries.push({
        id: part.id,
        sessionId: part.sessionId,
        orderKey: part.orderKey,
        acceptedAt: part.acceptedAt,
        location: { segment: name, offset, length: data.length },
      });
    }
    buffers.push(data);
    offset += data.length;
  }
  files.put(name, Buffer.concat(buffers));
  return entries;
}

const [r1, r2, r3, r4, r5] = [1, 2, 3, 4, 5].map((sequence) => messageRecord('s', sequence));

/** The bytes an entry's location covers in the file as it is now (what a bad line keeps). */
function bytesAt(files: FakeJournalFiles, entry: DiskEntry): Buffer {
  const { segment, offset, length } = entry.location;
  return Buffer.from(files.bytes(segment).subarray(offset, offset + length));
}

describe(readBack.name, () => {
  let files: FakeJournalFiles;

  beforeEach(() => {
    files = new FakeJournalFiles();
  });

  it('reads the records back, in the order asked', async () => {
    const [e1, e2, e3] = layout(files, A, [r1, r2, r3]);

    const results = await readBack(files, [e3, e1, e2]);

    expect(results).toEqual([
      { kind: 'record', record: r3 },
      { kind: 'record', record: r1 },
      { kind: 'record', record: r2 },
    ]);
  });

  it('reads nothing for no entries', async () => {
    expect(await readBack(files, [])).toEqual([]);
    expect(files.calls('readRanges')).toBe(0);
  });

  it('reads a run of nearby lines in one go, one read per segment', async () => {
    const [e1, e2, e3] = layout(files, A, [r1, 100, r2, r3]);
    const [e4, e5] = layout(files, B, [50, r4, 30, r5]);

    const results = await readBack(files, [e4, e3, e1, e5, e2]);

    expect(results.map((result) => result.kind === 'record' && result.record.id)).toEqual([
      r4.id,
      r3.id,
      r1.id,
      r5.id,
      r2.id,
    ]);
    const end = e3.location.offset + e3.location.length;
    const endOfB = e5.location.offset + e5.location.length;
    expect(files.log).toEqual([`readRanges ${B} 50+${endOfB - 50}`, `readRanges ${A} 0+${end}`]);
  });

  it(`reads lines ${MERGE_GAP} bytes apart together, and further ones apart`, async () => {
    const [near1, near2, far] = layout(files, A, [r1, MERGE_GAP, r2, MERGE_GAP + 1, r3]);

    const results = await readBack(files, [near1, near2, far]);

    expect(results.every((result) => result.kind === 'record')).toBe(true);
    const nearEnd = near2.location.offset + near2.location.length;
    expect(files.log).toEqual([
      `readRanges ${A} 0+${nearEnd},${far.location.offset}+${far.location.length}`,
    ]);
  });

  it('reads an entry whose line lies inside a longer one asked for', async () => {
    const [e1, e2, e3] = layout(files, A, [r1, r2, r3]);
    // The index claims the first line runs over all three (it cannot be read as one record).
    const spanning = {
      ...e1,
      location: { ...e1.location, length: e3.location.offset + e3.location.length },
    };

    const results = await readBack(files, [spanning, e2]);

    expect(results).toEqual([
      {
        kind: 'bad',
        reason: 'checksum mismatch (torn or corrupted line)',
        bytes: bytesAt(files, spanning),
      },
      { kind: 'record', record: r2 },
    ]);
  });

  describe('lines that no longer read back', () => {
    it('reports a line cut short by a shorter file', async () => {
      const [e1, e2] = layout(files, A, [r1, r2]);
      files.put(A, files.bytes(A).subarray(0, e2.location.offset + 10));

      const results = await readBack(files, [e1, e2]);

      expect(results).toEqual([
        { kind: 'record', record: r1 },
        { kind: 'bad', reason: 'line cut short on disk', bytes: bytesAt(files, e2) },
      ]);
      expect(bytesAt(files, e2)).toHaveLength(10);
    });

    it('reports a line gone altogether', async () => {
      const [, e2] = layout(files, A, [r1, r2]);
      files.put(A, files.bytes(A).subarray(0, e2.location.offset));

      expect(await readBack(files, [e2])).toEqual([
        { kind: 'bad', reason: 'line cut short on disk', bytes: Buffer.alloc(0) },
      ]);
    });

    it('reports a line that does not end where the index says', async () => {
      const [e1] = layout(files, A, [r1, r2]);
      const shorter = { ...e1, location: { ...e1.location, length: e1.location.length - 1 } };

      expect(await readBack(files, [shorter])).toEqual([
        { kind: 'bad', reason: 'line cut short on disk', bytes: bytesAt(files, shorter) },
      ]);
    });

    it('reports a line that holds another message than the one expected', async () => {
      const [e1] = layout(files, A, [r1]);
      const wrong = { ...e1, id: 's-9' };

      expect(await readBack(files, [wrong])).toEqual([
        { kind: 'bad', reason: `expected message s-9, found ${r1.id}`, bytes: bytesAt(files, e1) },
      ]);
    });

    it('reports a line whose checksum no longer matches', async () => {
      const [e1, e2] = layout(files, A, [r1, r2]);
      const data = files.bytes(A);
      data[e2.location.offset + 30] ^= 0x04;

      expect(await readBack(files, [e1, e2])).toEqual([
        { kind: 'record', record: r1 },
        {
          kind: 'bad',
          reason: 'checksum mismatch (torn or corrupted line)',
          bytes: bytesAt(files, e2),
        },
      ]);
    });

    it('reports every entry of a segment that cannot be read, and reads the others', async () => {
      const [e1, e2] = layout(files, A, [r1, r2]);
      const [e3] = layout(files, B, [r3]);
      files.failNext('readRanges', fsError('EIO', 'read'), A);

      const results = await readBack(files, [e1, e3, e2]);

      // An outage, not corruption: nothing says the lines are bad.
      const reason = 'segment unreadable: EIO: i/o error, read';
      expect(results).toEqual([
        { kind: 'unreadable', reason },
        { kind: 'record', record: r3 },
        { kind: 'unreadable', reason },
      ]);
    });

    it('reports the entries of a segment that is gone', async () => {
      const [e1] = layout(files, A, [r1]);
      await files.remove(A);

      expect(await readBack(files, [e1])).toEqual([
        {
          kind: 'unreadable',
          reason: 'segment unreadable: ENOENT: no such file or directory, open',
        },
      ]);
    });
  });
});

describe(SegmentCache.name, () => {
  let sut: SegmentCache;

  beforeEach(() => {
    sut = new SegmentCache(100);
  });

  it('serves a copy for any range it is long enough for', () => {
    const copy = Buffer.alloc(40, 'a');
    sut.set(A, copy);

    expect(sut.get(A, 40)).toBe(copy);
    expect(sut.get(A, 0)).toBe(copy);
    expect(sut.get(A, 41)).toBeUndefined();
    expect(sut.get(B, 1)).toBeUndefined();
    expect(sut.size).toBe(40);
  });

  it('keeps a segment of exactly its size, and none bigger', () => {
    sut.set(A, Buffer.alloc(101));
    expect(sut.get(A, 0)).toBeUndefined();
    expect(sut.size).toBe(0);

    sut.set(B, Buffer.alloc(100));
    expect(sut.get(B, 100)).toBeDefined();
    expect(sut.size).toBe(100);
  });

  it('lets go of the least recently used segments to make room', () => {
    const [first, second, third] = ['first', 'second', 'third'];
    sut.set(first, Buffer.alloc(40));
    sut.set(second, Buffer.alloc(40));
    sut.get(first, 1);

    sut.set(third, Buffer.alloc(40));

    expect([sut.get(first, 1), sut.get(second, 1), sut.get(third, 1)].map(Boolean)).toEqual([
      true,
      false,
      true,
    ]);
    expect(sut.size).toBe(80);
  });

  it('makes no more room than it needs', () => {
    sut.set('first', Buffer.alloc(30));
    sut.set('second', Buffer.alloc(30));
    sut.set('third', Buffer.alloc(30));

    sut.set('fourth', Buffer.alloc(40));

    expect(['first', 'second', 'third', 'fourth'].map((name) => Boolean(sut.get(name, 0)))).toEqual(
      [false, true, true, true],
    );
    expect(sut.size).toBe(100);
  });

  it('replaces the copy of a segment set again, counting it once', () => {
    sut.set(A, Buffer.alloc(40));
    const longer = Buffer.alloc(60);

    sut.set(A, longer);

    expect(sut.get(A, 60)).toBe(longer);
    expect(sut.size).toBe(60);
  });

  it('drops the old copy even when the new one is too big to keep', () => {
    sut.set(A, Buffer.alloc(40));

    sut.set(A, Buffer.alloc(200));

    expect(sut.get(A, 0)).toBeUndefined();
    expect(sut.size).toBe(0);
  });

  it('deletes a copy, and ignores one it does not have', () => {
    sut.set(A, Buffer.alloc(40));
    sut.set(B, Buffer.alloc(10));

    sut.delete(A);
    sut.delete('unknown');

    expect(sut.get(A, 0)).toBeUndefined();
    expect(sut.size).toBe(10);
  });
});

describe(`${readBack.name} with a cache`, () => {
  let files: FakeJournalFiles;
  let cache: SegmentCache;

  beforeEach(() => {
    files = new FakeJournalFiles();
    cache = new SegmentCache(1024 * 1024);
  });

  it('reads a segment whole once, and serves its later records from the copy', async () => {
    const [e1, e2] = layout(files, A, [r1, r2]);

    expect(await readBack(files, [e2], cache)).toEqual([{ kind: 'record', record: r2 }]);
    expect(await readBack(files, [e1, e2], cache)).toEqual([
      { kind: 'record', record: r1 },
      { kind: 'record', record: r2 },
    ]);

    expect(files.log).toEqual([`read ${A}`]);
    expect(cache.size).toBe(e2.location.offset + e2.location.length);
  });

  it('reads a segment again once it has grown past the copy', async () => {
    const [e1] = layout(files, A, [r1]);
    await readBack(files, [e1], cache);
    const [e1again, e2] = layout(files, A, [r1, r2]);

    expect(await readBack(files, [e1again, e2], cache)).toEqual([
      { kind: 'record', record: r1 },
      { kind: 'record', record: r2 },
    ]);
    expect(files.log).toEqual([`read ${A}`, `read ${A}`]);
  });

  it('keeps a segment exactly as big as the cache', async () => {
    const [e1] = layout(files, A, [r1]);
    cache = new SegmentCache(e1.location.length);

    expect(await readBack(files, [e1], cache)).toEqual([{ kind: 'record', record: r1 }]);
    expect(files.log).toEqual([`read ${A}`]);
    expect(cache.size).toBe(e1.location.length);
  });

  it('reads by ranges a segment too big to keep', async () => {
    cache = new SegmentCache(100);
    const [e1] = layout(files, A, [r1]);

    expect(await readBack(files, [e1], cache)).toEqual([{ kind: 'record', record: r1 }]);
    expect(files.log).toEqual([`read ${A}`, `readRanges ${A} 0+${e1.location.length}`]);
    expect(cache.size).toBe(0);
  });

  it('reads by ranges, keeping no copy, a segment the caller says may still change', async () => {
    const [e1] = layout(files, A, [r1]);
    const [e3] = layout(files, B, [r3]);

    const results = await readBack(files, [e1, e3], cache, (segment) => segment === B);

    expect(results).toEqual([
      { kind: 'record', record: r1 },
      { kind: 'record', record: r3 },
    ]);
    expect(files.log).toEqual([`readRanges ${A} 0+${e1.location.length}`, `read ${B}`]);
    expect(cache.get(A, 0)).toBeUndefined();
  });

  it('checks each line of the copy as it checks one read by range', async () => {
    const [e1, e2] = layout(files, A, [r1, r2]);
    const wrong = { ...e1, id: 's-9' };
    const beyond = { ...e2, location: { ...e2.location, offset: e2.location.offset + 5 } };

    expect(await readBack(files, [wrong, beyond], cache)).toEqual([
      { kind: 'bad', reason: `expected message s-9, found ${r1.id}`, bytes: bytesAt(files, e1) },
      { kind: 'bad', reason: 'line cut short on disk', bytes: bytesAt(files, beyond) },
    ]);
  });

  it('reads by ranges a segment that cannot be read whole (over 2 GiB)', async () => {
    const [e1, e2] = layout(files, A, [r1, r2]);
    const tooLarge = Object.assign(new RangeError('File size (3221225472) is greater than 2 GiB'), {
      code: 'ERR_FS_FILE_TOO_LARGE',
    });
    files.failNext('read', tooLarge, A);

    expect(await readBack(files, [e1, e2], cache)).toEqual([
      { kind: 'record', record: r1 },
      { kind: 'record', record: r2 },
    ]);
    const end = e2.location.offset + e2.location.length;
    expect(files.log).toEqual([`readRanges ${A} 0+${end}`]);
    expect(cache.size).toBe(0);
  });

  it('reports every entry of a segment that cannot be read at all as unreadable', async () => {
    const [e1, e2] = layout(files, A, [r1, r2]);
    files.failNext('read', fsError('EACCES', 'open'), A);
    files.failNext('readRanges', fsError('EACCES', 'open'), A);

    const reason = 'segment unreadable: EACCES: permission denied, open';
    expect(await readBack(files, [e1, e2], cache)).toEqual([
      { kind: 'unreadable', reason },
      { kind: 'unreadable', reason },
    ]);
    expect(cache.size).toBe(0);
  });
});
