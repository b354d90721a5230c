import { errorCode } from '../common/errors/describe-error.js';
import {
  decodeJournalLine,
  encodeScrubbedLine,
  isScrubbedHead,
  journaledIdOf,
} from './journal-codec.js';
import { type JournalFiles } from './journal-files.js';
import { type RecordLocation } from './journal-ledger.js';
import { scanLines } from './line-scan.js';
import { parseSegmentName } from './segment-names.js';

/** A line of a redacted message that a scrub overwrote. */
export interface ScrubbedRecord {
  id: string;
  /** The session of the record the line held; absent when it was a bad line (torn, flipped). */
  sessionId?: string;
  location: RecordLocation;
}

/** What a scrub needs of the journal around the files. */
export interface SegmentScrubParts {
  files: JournalFiles;
  /** Runs a rewrite in the writer's turn (JournalWriter.inTurn): no append lands beside it. */
  turn: <T>(work: () => Promise<T>) => Promise<T>;
  /** A segment's bytes changed: a copy of it kept in memory (SegmentCache) must go. */
  rewritten: (segment: string) => void;
}

/** A line of one of the messages, and the bytes that must take its place. */
interface Found {
  record: ScrubbedRecord;
  /** The line as the scrub writes it: a scrubbed line of the same length. */
  replacement: Buffer;
}

/**
 * Overwrites every line of the messages `ids` in every segment of the directory (this
 * instance's, adopted ones, other instances') with a scrubbed line of the same length
 * (encodeScrubbedLine), and syncs: afterwards no segment holds a byte of their records, and
 * every other line is where it was. A bad line is one of theirs when it names their id where a
 * journal line does (journaledIdOf). Resolves with the lines overwritten; a segment that
 * vanished meanwhile holds nothing any more. Rejects when a segment cannot be read or written:
 * what was overwritten stays so, and a second call does the rest.
 *
 * Each segment is read twice: once outside any turn, to find which hold such lines (most hold
 * none), then again in the writer's turn, as it is rewritten: an append to the same file may
 * have moved the end of it meanwhile, never a line before it.
 */
export async function scrubSegments(
  parts: SegmentScrubParts,
  ids: ReadonlySet<string>,
): Promise<ScrubbedRecord[]> {
  const scrubbed: ScrubbedRecord[] = [];
  const segments = (await parts.files.list()).filter((name) => parseSegmentName(name)).sort();
  for (const segment of segments) {
    if ((await findLines(parts.files, segment, ids)).length === 0) continue;
    const rewritten = await parts.turn(async () => {
      const found = await findLines(parts.files, segment, ids);
      if (found.length > 0) await overwrite(parts.files, segment, found);
      return found.map(({ record }) => record);
    });
    parts.rewritten(segment);
    for (const record of rewritten) scrubbed.push(record);
  }
  return scrubbed;
}

/**
 * The lines of `segment` that name one of `ids`; none when the segment is gone. One scrubbed
 * already is written again all the same: the sync after it may have failed, and the kernel may
 * then have dropped the write (only a new write is synced again). Read a chunk at a time, as a
 * segment may be large.
 */
async function findLines(
  files: JournalFiles,
  segment: string,
  ids: ReadonlySet<string>,
): Promise<Found[]> {
  const lines: (ScrubbedRecord & { whole: Buffer })[] = [];
  let end: Awaited<ReturnType<typeof scanLines>>;
  try {
    end = await scanLines(files, segment, (line, at) => {
      const id = journaledIdOf(line);
      if (id === null || !ids.has(id)) return;
      const whole = encodeScrubbedLine(id, at.length + 1);
      if (!whole) {
        // Only a scrubbed line cut short by the end of its file is too short to hold one:
        // every byte of it is a scrubbed line's already.
        if (isScrubbedHead(line)) return;
        throw new Error(`${segment}: the line at ${at.offset} names ${id} but cannot be scrubbed`);
      }
      const decoded = decodeJournalLine(line);
      lines.push({
        id,
        ...(decoded.kind === 'record' ? { sessionId: decoded.record.sessionId } : {}),
        location: { segment, offset: at.offset, length: at.length + 1 },
        whole,
      });
    });
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  return lines.map(({ whole, ...record }) => {
    // The last line of a torn write has no newline: its bytes are overwritten, no more.
    const torn = end.tornTail && record.location.offset + whole.length - 1 === end.size;
    if (!torn) return { record, replacement: whole };
    const length = whole.length - 1;
    return {
      record: { ...record, location: { ...record.location, length } },
      replacement: whole.subarray(0, length),
    };
  });
}

/** Writes the scrubbed lines in place, and syncs them. */
async function overwrite(files: JournalFiles, segment: string, found: Found[]): Promise<void> {
  let file;
  try {
    file = await files.openForOverwrite(segment);
  } catch (error) {
    // Deleted since it was read (all it owed was resolved): nothing of it is left to scrub.
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  try {
    for (const { record, replacement } of found) {
      await file.write(replacement, record.location.offset);
    }
    await file.sync();
  } finally {
    await file.close().catch(() => undefined);
  }
}
