import { hash } from 'node:crypto';
import { type MessageRecord } from '../message/message-record.js';

// What set-aside.jsonl holds, line by line: entries, the resolutions that close them, and the
// id an entry is named by (SetAsideLog keeps the file).

/** One record or byte range the journal could not replay, kept with the reason. */
export interface SetAsideEntry {
  /** Epoch ms when it was set aside. */
  at: number;
  reason: string;
  /** The file it came from. */
  source: string;
  /** Byte offset in `source`, when it is a range of it. */
  offset?: number;
  sessionId?: string;
  messageId?: string;
  /** The whole record, when it was readable (a record the database refused). */
  record?: MessageRecord;
  /** The bytes, when they were not a readable record: as text, or base64 when not UTF-8. */
  raw?: string;
  rawBase64?: string;
  /**
   * Set once its record and bytes were removed for good (the message was redacted; see
   * scrubbedEntryLine): the id the entry had, which it keeps, since its line changed.
   */
  scrubbed?: string;
}

/** What an operator did with a set-aside entry (SetAsideActions). */
export type SetAsideAction = 'dropped' | 'redriven';

/**
 * A line of the log that closes an entry: the operator dropped it, or re-drove it into the
 * journal. The entry's own line stays as it was: the log is append-only.
 */
export interface SetAsideResolution {
  resolved: string;
  action: SetAsideAction;
  /** Epoch ms. */
  at: number;
}

/** An entry still open, with the id the admin API names it by. */
export interface OpenSetAside {
  id: string;
  entry: SetAsideEntry;
}

/** How the line of a scrubbed entry begins (it is written with this key first). */
export const SCRUBBED_HEAD = '{"scrubbed":"';
const SCRUBBED_ID = /^\{"scrubbed":"([0-9a-f]{16})"/;

/**
 * The id of an entry: a hash of its line as written, so the same entry has the same id in
 * every run without the line having to carry one (older logs have none).
 */
export function setAsideIdOf(line: string): string {
  // A scrubbed entry's line was rewritten: it names the id it had, which resolutions close.
  if (line.startsWith(SCRUBBED_HEAD)) {
    const kept = SCRUBBED_ID.exec(line);
    if (kept) return kept[1];
  }
  // toString of the first 8 bytes, not a slice of the whole hex digest: a slice would keep the
  // 64-character string alive in memory for each of what may be millions of open entries.
  // crypto.hash: one call, no Hash object per line (a third of a start's time otherwise).
  return hash('sha256', line, 'buffer').toString('hex', 0, 8);
}

export const isResolution = (value: object): value is SetAsideResolution =>
  typeof (value as Partial<SetAsideResolution>).resolved === 'string';

/** The fields every entry has: a line without them is no entry (and would break the view). */
export const isEntry = (value: object): value is SetAsideEntry => {
  const entry = value as Partial<SetAsideEntry>;
  return (
    typeof entry.at === 'number' &&
    typeof entry.reason === 'string' &&
    typeof entry.source === 'string'
  );
};

/** The JSON value of a line, or undefined when it is none (a torn line of a crash). */
export function parsed(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * What a line of the log holds (see `parsed`); for a scrubbed entry whose rewrite a crash tore
 * (its head written, the old line's bytes after it), the entry at its head.
 */
export function valueOfLine(line: string): unknown {
  const value = parsed(line);
  if (value !== undefined || !line.startsWith(SCRUBBED_HEAD)) return value;
  for (let end = line.indexOf('}'); end >= 0; end = line.indexOf('}', end + 1)) {
    const head = parsed(line.slice(0, end + 1));
    if (head !== undefined) return head;
  }
  return undefined;
}

/** `bytes` as the set-aside log keeps them: text when they are valid UTF-8, else base64. */
export function rawField(bytes: Buffer): Pick<SetAsideEntry, 'raw' | 'rawBase64'> {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes)
    ? { raw: text }
    : { rawBase64: bytes.toString('base64') };
}
