import { Logger } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { createHash } from 'node:crypto';
import { describeError, errorCode } from '../common/errors/describe-error.js';
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

// Entries kept in memory for the admin view; the file keeps them all.
const RECENT_LIMIT = 100;

/**
 * The id of an entry: a hash of its line as written, so the same entry has the same id in
 * every run without the line having to carry one (older logs have none).
 */
export function setAsideIdOf(line: string): string {
  return createHash('sha256').update(line).digest('hex').slice(0, 16);
}

const isResolution = (value: unknown): value is SetAsideResolution =>
  typeof (value as Partial<SetAsideResolution>).resolved === 'string';

/**
 * `set-aside.jsonl` in the spool directory: one JSON line per record or range set aside,
 * synced before the journal lets go of the original, so nothing is ever thrown away unseen.
 * An entry an operator dropped or re-drove is closed by a resolution line; it is counted and
 * shown no more.
 */
export class SetAsideLog {
  private recentEntries: OpenSetAside[] = [];
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
    } catch (error) {
      // None yet is the usual case. Any other failure (unreadable, too large to read whole)
      // must not pass for an empty log: the count, the gauge and its alert would say all is well.
      if (errorCode(error) !== 'ENOENT') {
        new Logger('Journal').error(
          `Could not read ${this.files.directory}/${SET_ASIDE_LOG}: ${describeError(error)}; what earlier runs set aside there is neither counted nor listed until it can be read (at the next start)`,
        );
      }
      return;
    }
    const open = new Map<string, SetAsideEntry>();
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        // A torn last line of a crash: the entry was never counted as kept.
        continue;
      }
      if (isResolution(value)) open.delete(value.resolved);
      else open.set(setAsideIdOf(line), value as SetAsideEntry);
    }
    this.total = open.size;
    this.recentEntries = [...open].slice(-RECENT_LIMIT).map(([id, entry]) => ({ id, entry }));
  }

  /** Appends and syncs `entries`; rejects when they are not safely on disk. */
  async append(entries: readonly SetAsideEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lines = entries.map((entry) => JSON.stringify(entry));
    await this.write(lines);
    this.total += entries.length;
    this.recentEntries = [
      ...this.recentEntries,
      ...entries.map((entry, index) => ({ id: setAsideIdOf(lines[index]), entry })),
    ].slice(-RECENT_LIMIT);
  }

  /** The open entry named `id`, among the newest (those the admin view shows). */
  find(id: string): OpenSetAside | undefined {
    return this.recentEntries.find((open) => open.id === id);
  }

  /**
   * Closes the entry `id` with a synced resolution line; rejects when it is not on disk (the
   * entry stays open). The entry's line itself is kept.
   */
  async resolve(id: string, action: SetAsideAction, at: number = Date.now()): Promise<void> {
    const resolution: SetAsideResolution = { resolved: id, action, at };
    await this.write([JSON.stringify(resolution)]);
    const before = this.recentEntries.length;
    this.recentEntries = this.recentEntries.filter((open) => open.id !== id);
    this.total -= before - this.recentEntries.length;
  }

  private async write(lines: readonly string[]): Promise<void> {
    const data = Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8');
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
  }

  /** The newest open entries, newest last. */
  recent(): readonly SetAsideEntry[] {
    return this.recentEntries.map((open) => open.entry);
  }

  /** The newest open entries with their ids, newest last. */
  recentOpen(): readonly OpenSetAside[] {
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
