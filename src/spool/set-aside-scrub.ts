import { errorCode } from '../common/errors/describe-error.js';
import { journaledIdOf } from './journal-codec.js';
import { type JournalFiles } from './journal-files.js';
import { scanLines } from './line-scan.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import {
  isEntry,
  parsed,
  SCRUBBED_HEAD,
  type SetAsideEntry,
  setAsideIdOf,
  valueOfLine,
} from './set-aside-entry.js';

// What becomes of a set-aside entry of a redacted message (SetAsideLog.scrub): it keeps its id,
// time, reason and source, and loses its record and bytes.

/**
 * The message of `ids` whose copy `entry` holds (its record, or the bytes of its line), or
 * undefined when it holds none of theirs.
 */
export function copyHeldOf(entry: SetAsideEntry, ids: ReadonlySet<string>): string | undefined {
  const bytes = rawBytesOf(entry);
  if (entry.record === undefined && bytes === undefined) return undefined;
  if (entry.messageId !== undefined && ids.has(entry.messageId)) return entry.messageId;
  const recordId = (entry.record as { id?: unknown } | undefined)?.id;
  if (typeof recordId === 'string' && ids.has(recordId)) return recordId;
  // A bad line (torn, flipped) set aside at adoption names no message but in its own bytes.
  const named = bytes === undefined ? null : journaledIdOf(bytes);
  return named !== null && ids.has(named) ? named : undefined;
}

/**
 * `entry` without its record and bytes, naming the message they were of (`messageId`, so that
 * a scrub again finds it: see SetAsideLog.scrub); `id` is the id it is named by, kept.
 */
export function scrubbedEntry(entry: SetAsideEntry, id: string, messageId: string): SetAsideEntry {
  return {
    scrubbed: id,
    at: entry.at,
    reason: entry.reason,
    source: entry.source,
    ...(entry.offset !== undefined ? { offset: entry.offset } : {}),
    ...(entry.sessionId !== undefined ? { sessionId: entry.sessionId } : {}),
    messageId,
  };
}

/** `entry` as the log writes it once a message of its was redacted: without record and bytes. */
export function withoutCopy(entry: SetAsideEntry): SetAsideEntry {
  return Object.fromEntries(
    Object.entries(entry).filter(([key]) => !['record', 'raw', 'rawBase64'].includes(key)),
  ) as unknown as SetAsideEntry;
}

const RAW_BASE64_KEY = Buffer.from('"rawBase64"', 'latin1');
const SCRUBBED_HEAD_BYTES = Buffer.from(SCRUBBED_HEAD, 'latin1');

// Dropped in this order when the scrubbed entry would not fit in the old line's bytes.
const DROPPABLE = ['offset', 'sessionId', 'messageId'] as const;

/**
 * The line (no newline) of `bytes` bytes that takes the place of a scrubbed entry's in the log
 * (see scrubbedEntry: `scrubbed` first, so that setAsideIdOf finds the id it keeps), padded with
 * spaces. The same length keeps every other line where it was. A line whose record or bytes
 * went is seldom too short to hold it; when it is, the optional fields go, then null.
 */
export function scrubbedEntryLine(entry: SetAsideEntry, bytes: number): string | null {
  for (let dropped = 0; dropped <= DROPPABLE.length; dropped += 1) {
    const kept = Object.fromEntries(
      Object.entries(entry).filter(
        ([key]) => !DROPPABLE.slice(0, dropped).some((name) => name === key),
      ),
    );
    const text = JSON.stringify(kept);
    const room = bytes - Buffer.byteLength(text, 'utf8');
    if (room >= 0) return `${text}${' '.repeat(room)}`;
  }
  return null;
}

/**
 * The lines of the set-aside log to overwrite for `ids`, with what takes their place: their
 * entries', theirs scrubbed already (written again), and those of scrubs a crash tore (see
 * valueOfLine), which may still hold some of the old line. Read a chunk at a time.
 */
export async function linesToScrub(
  files: Pick<JournalFiles, 'readRanges'>,
  ids: ReadonlySet<string>,
): Promise<{ offset: number; line: string }[]> {
  const needles = [...ids].every(isPlainId) ? [...ids].map((id) => Buffer.from(id, 'utf8')) : null;
  const found: { offset: number; line: string }[] = [];
  try {
    await scanLines(files, SET_ASIDE_LOG, (bytes, at) => {
      const head = bytes.subarray(0, SCRUBBED_HEAD_BYTES.length).equals(SCRUBBED_HEAD_BYTES);
      // Most lines are another message's: told without parsing them.
      if (
        needles &&
        !head &&
        !bytes.includes(RAW_BASE64_KEY) &&
        !needles.some((needle) => bytes.includes(needle))
      ) {
        return;
      }
      const line = bytes.toString('utf8');
      // A scrub a crash tore: its head is written, the rest may still be the old line's.
      const torn = head && parsed(line) === undefined;
      const value = valueOfLine(line);
      const entry = value !== null && typeof value === 'object' && isEntry(value) ? value : null;
      const messageId = entry ? copyHeldOf(entry, ids) : undefined;
      let scrubbed: SetAsideEntry | undefined;
      if (entry && messageId) {
        scrubbed = scrubbedEntry(entry, setAsideIdOf(line), messageId);
      } else if (entry?.scrubbed && (torn || ids.has(entry.messageId ?? ''))) {
        // Torn, or scrubbed already: written again all the same, in case the sync that
        // followed failed (the kernel may then have dropped the write: only a new one counts).
        scrubbed = entry;
      } else if (torn && entry === null) {
        // Not even the head of a torn scrub reads: blanked (a blank line is no entry).
        found.push({ offset: at.offset, line: ' '.repeat(at.length) });
        return;
      }
      if (!scrubbed) return;
      const rewritten = scrubbedEntryLine(scrubbed, at.length);
      if (rewritten === null) {
        throw new Error(`the set-aside entry at ${at.offset} cannot be scrubbed: too short`);
      }
      found.push({ offset: at.offset, line: rewritten });
    });
  } catch (error) {
    // No log, nothing to scrub.
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  return found;
}

function rawBytesOf(entry: SetAsideEntry): Buffer | undefined {
  if (typeof entry.raw === 'string') return Buffer.from(entry.raw, 'utf8');
  if (typeof entry.rawBase64 === 'string') return Buffer.from(entry.rawBase64, 'base64');
  return undefined;
}

/**
 * Whether `id` is found verbatim in every line that names it: JSON escapes none of its
 * characters (a quote, a backslash, a control character).
 */
function isPlainId(id: string): boolean {
  return id.length > 0 && ![...id].some((char) => char === '"' || char === '\\' || char < ' ');
}
