import { decodeJournalLine, isScrubbedHead } from './journal-codec.js';
import { type MessageRecord } from '../message/message-record.js';
import { type JournalFiles } from './journal-files.js';
import { type DiskEntry } from './journal-only-list.js';
import { describeError } from '../common/errors/describe-error.js';

// Ranges of one segment closer than this are read in one go.
const MERGE_GAP_BYTES = 64 * 1024;

/**
 * Whole segments recently read, up to `maxBytes`, least recently used out first. A session's
 * records are spread through segments shared by every session, so draining sessions one by
 * one would otherwise read the same segments over and over (at start, once per session).
 * Segments only grow (but for a scrub's rewrite of a line in place, which drops the copy), so a
 * copy serves any range it is long enough for.
 */
export class SegmentCache {
  private readonly buffers = new Map<string, Buffer>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The cached copy of `segment` when it holds at least `end` bytes. */
  get(segment: string, end: number): Buffer | undefined {
    const buffer = this.buffers.get(segment);
    if (!buffer || buffer.length < end) return undefined;
    this.buffers.delete(segment);
    this.buffers.set(segment, buffer);
    return buffer;
  }

  set(segment: string, buffer: Buffer): void {
    this.delete(segment);
    if (buffer.length > this.maxBytes) return;
    for (const [name, cached] of this.buffers) {
      if (this.bytes + buffer.length <= this.maxBytes) break;
      this.buffers.delete(name);
      this.bytes -= cached.length;
    }
    this.buffers.set(segment, buffer);
    this.bytes += buffer.length;
  }

  delete(segment: string): void {
    const buffer = this.buffers.get(segment);
    if (!buffer) return;
    this.buffers.delete(segment);
    this.bytes -= buffer.length;
  }

  get size(): number {
    return this.bytes;
  }
}

/**
 * What one line read back came to: its record; a bad line (corrupt: it is set aside with its
 * bytes); the line of a redacted message, scrubbed (stored, so owed no more, and nothing of it
 * is kept); or no answer from the disk at all (EACCES, ENOENT, EIO, EMFILE, ...), which says
 * nothing of the record: it stays owed, and is read again later.
 */
export type ReadBackResult =
  | { kind: 'record'; record: MessageRecord }
  | { kind: 'bad'; reason: string; bytes: Buffer }
  | { kind: 'scrubbed' }
  | { kind: 'unreadable'; reason: string };

const SCRUBBED: ReadBackResult = { kind: 'scrubbed' };

/**
 * Reads the records of `entries` back from their segments and checks each again (checksum,
 * and that it is the record the index expects). With a cache, a segment is read whole once
 * and kept (one too big to read whole, over 2 GiB, is read by ranges); without, one read per
 * run of nearby lines. Results are in the order of `entries`; a line that no longer reads
 * back says why.
 */
export async function readBack(
  files: JournalFiles,
  entries: readonly DiskEntry[],
  cache?: SegmentCache,
  cacheable: (segment: string) => boolean = () => true,
): Promise<ReadBackResult[]> {
  const results = new Array<ReadBackResult>(entries.length);
  const bySegment = new Map<string, number[]>();
  entries.forEach((entry, index) => {
    const indexes = bySegment.get(entry.location.segment) ?? [];
    indexes.push(index);
    bySegment.set(entry.location.segment, indexes);
  });
  for (const [segment, indexes] of bySegment) {
    if (
      cache &&
      cacheable(segment) &&
      (await readWhole(files, segment, indexes, entries, results, cache))
    ) {
      continue;
    }
    indexes.sort((left, right) => entries[left].location.offset - entries[right].location.offset);
    const runs: { offset: number; length: number; members: number[] }[] = [];
    for (const index of indexes) {
      const { offset, length } = entries[index].location;
      const run = runs[runs.length - 1];
      if (run && offset - (run.offset + run.length) <= MERGE_GAP_BYTES) {
        run.length = Math.max(run.length, offset + length - run.offset);
        run.members.push(index);
      } else {
        runs.push({ offset, length, members: [index] });
      }
    }
    let buffers: Buffer[];
    try {
      buffers = await files.readRanges(segment, runs);
    } catch (error) {
      const reason = `segment unreadable: ${describeError(error)}`;
      for (const index of indexes) results[index] = { kind: 'unreadable', reason };
      continue;
    }
    runs.forEach((run, runIndex) => {
      for (const index of run.members) {
        const { offset, length } = entries[index].location;
        const line = buffers[runIndex].subarray(offset - run.offset, offset - run.offset + length);
        results[index] = checkLine(line, length, entries[index]);
      }
    });
  }
  return results;
}

/**
 * Serves `indexes` from the cached (or freshly read) whole segment; false when it is too big
 * to cache or could not be read whole: the caller then reads ranges, and says why they fail.
 */
async function readWhole(
  files: JournalFiles,
  segment: string,
  indexes: readonly number[],
  entries: readonly DiskEntry[],
  results: ReadBackResult[],
  cache: SegmentCache,
): Promise<boolean> {
  const end = Math.max(
    ...indexes.map((index) => entries[index].location.offset + entries[index].location.length),
  );
  let buffer = cache.get(segment, end);
  if (!buffer) {
    try {
      buffer = await files.read(segment);
    } catch {
      return false;
    }
    if (buffer.length > cache.maxBytes) return false;
    cache.set(segment, buffer);
  }
  for (const index of indexes) {
    const { offset, length } = entries[index].location;
    results[index] = checkLine(buffer.subarray(offset, offset + length), length, entries[index]);
  }
  return true;
}

function checkLine(line: Buffer, length: number, entry: DiskEntry): ReadBackResult {
  // A copy: the bytes of a bad line outlive the buffer of the whole segment they came from.
  const bytes = (): Buffer => Buffer.from(line);
  if (line.length !== length || line[length - 1] !== 0x0a) {
    // The file cut inside a scrubbed line: what is left of it may be the redacted message's.
    if (isScrubbedHead(line)) return SCRUBBED;
    return { kind: 'bad', reason: 'line cut short on disk', bytes: bytes() };
  }
  const decoded = decodeJournalLine(line.subarray(0, length - 1));
  if (decoded.kind === 'bad') return { ...decoded, bytes: bytes() };
  if (decoded.kind === 'scrubbed') {
    if (decoded.id === null || decoded.id === entry.id) return SCRUBBED;
    // Not the line the index expects: said, but none of its bytes copied (a torn scrub's
    // may be the rest of a redacted message).
    return {
      kind: 'bad',
      reason: `expected message ${entry.id}, found the scrubbed line of ${decoded.id}`,
      bytes: Buffer.alloc(0),
    };
  }
  if (decoded.record.id !== entry.id) {
    return {
      kind: 'bad',
      reason: `expected message ${entry.id}, found ${decoded.record.id}`,
      bytes: bytes(),
    };
  }
  return decoded;
}
