import { Mutex } from 'async-mutex';
import { type MessageRecord } from '../message/message-record.js';
import { type JournalFiles } from './journal-files.js';
import { SET_ASIDE_LOG } from './segment-names.js';

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
}

// Entries kept in memory for the admin view; the file keeps them all.
const RECENT_LIMIT = 100;

/**
 * `set-aside.jsonl` in the spool directory: one JSON line per record or range set aside,
 * synced before the journal lets go of the original, so nothing is ever thrown away unseen.
 */
export class SetAsideLog {
  private recentEntries: SetAsideEntry[] = [];
  private total = 0;
  // One append at a time: one that fails cuts the file back to the size it found, which must
  // not throw away the synced entries of another that ran meanwhile.
  private readonly turns = new Mutex();

  constructor(private readonly files: JournalFiles) {}

  /** Reads what earlier runs set aside, for the counts and the admin view. */
  async load(): Promise<void> {
    let text: string;
    try {
      text = (await this.files.read(SET_ASIDE_LOG)).toString('utf8');
    } catch {
      return;
    }
    const entries: SetAsideEntry[] = [];
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      try {
        entries.push(JSON.parse(line) as SetAsideEntry);
      } catch {
        // A torn last line of a crash: the entry was never counted as kept.
      }
    }
    this.total = entries.length;
    this.recentEntries = entries.slice(-RECENT_LIMIT);
  }

  /** Appends and syncs `entries`; rejects when they are not safely on disk. */
  async append(entries: readonly SetAsideEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const data = Buffer.from(entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''), 'utf8');
    await this.turns.runExclusive(async () => {
      const { file, size } = await this.files.openForAppend(SET_ASIDE_LOG);
      try {
        await file.write(data, size);
        await file.sync();
      } catch (error) {
        // Leave no torn line for the next entry to be glued to.
        await file.truncate(size).catch(() => undefined);
        throw error;
      } finally {
        // Once synced, the entries are kept: a failing close must not make the caller write
        // them again.
        await file.close().catch(() => undefined);
      }
    });
    this.total += entries.length;
    this.recentEntries = [...this.recentEntries, ...entries].slice(-RECENT_LIMIT);
  }

  /** The newest entries, newest last. */
  recent(): readonly SetAsideEntry[] {
    return this.recentEntries;
  }

  get count(): number {
    return this.total;
  }
}

/** `bytes` as the set-aside log keeps them: text when they are valid UTF-8, else base64. */
export function rawField(bytes: Buffer): Pick<SetAsideEntry, 'raw' | 'rawBase64'> {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes)
    ? { raw: text }
    : { rawBase64: bytes.toString('base64') };
}
