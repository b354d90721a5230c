import { Logger } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { createHash } from 'node:crypto';
import { describeError, errorCode } from '../common/errors/describe-error.js';
import { type MessageRecord } from '../message/message-record.js';
import { type JournalFiles } from './journal-files.js';
import { type LineAt, scanLines } from './line-scan.js';
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

// Open entries kept whole in memory, the newest: what the admin view lists. The others are
// known by where their line is, and read from the file when an action names them.
export const RECENT_LIMIT = 100;

/**
 * The id of an entry: a hash of its line as written, so the same entry has the same id in
 * every run without the line having to carry one (older logs have none).
 */
export function setAsideIdOf(line: string): string {
  return createHash('sha256').update(line).digest('hex').slice(0, 16);
}

const isResolution = (value: unknown): value is SetAsideResolution =>
  typeof (value as Partial<SetAsideResolution>).resolved === 'string';

/** The JSON value of a line, or undefined when it is none (a torn line of a crash). */
function parsed(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * `set-aside.jsonl` in the spool directory: one JSON line per record or range set aside,
 * synced before the journal lets go of the original, so nothing is ever thrown away unseen.
 * An entry an operator dropped or re-drove is closed by a resolution line; it is counted and
 * shown no more.
 *
 * Memory holds where each open entry's line is (a few dozen bytes each), and the newest
 * RECENT_LIMIT of them whole; closing one of those brings the next older one in, so the view
 * stays full while open entries are left. The file is read in chunks, never whole.
 */
export class SetAsideLog {
  // Every open entry, in the order its line was written.
  private readonly open = new Map<string, LineAt>();
  private recentEntries: OpenSetAside[] = [];
  // The file ends in a line torn by a crash: the next line written must not be glued to it.
  private tornTail = false;
  // One append at a time: one that fails cuts the file back to the size it found, which must
  // not throw away the synced entries of another that ran meanwhile.
  private readonly turns = new Mutex();

  constructor(private readonly files: JournalFiles) {}

  /** Reads what earlier runs set aside, for the counts and the admin view. */
  async load(): Promise<void> {
    const open = new Map<string, LineAt>();
    try {
      const end = await scanLines(this.files, SET_ASIDE_LOG, (bytes, at) => {
        const line = bytes.toString('utf8');
        const value = parsed(line);
        // An empty line, or one torn by a crash (the entry was never counted as kept).
        if (value === undefined || value === null || typeof value !== 'object') return;
        if (isResolution(value)) open.delete(value.resolved);
        else open.set(setAsideIdOf(line), at);
      });
      this.tornTail = end.tornTail;
      this.recentEntries = await this.readOpen(newestOf(open.keys()), open);
    } catch (error) {
      // None yet is the usual case. Any other failure (unreadable, vanished half way) must not
      // pass for an empty log: the count, the gauge and its alert would say all is well.
      if (errorCode(error) !== 'ENOENT') {
        new Logger('Journal').error(
          `Could not read ${this.files.directory}/${SET_ASIDE_LOG}: ${describeError(error)}; what earlier runs set aside there is neither counted nor listed until it can be read (at the next start)`,
        );
      }
      return;
    }
    for (const [id, at] of open) this.open.set(id, at);
  }

  /** Appends and syncs `entries`; rejects when they are not safely on disk. */
  async append(entries: readonly SetAsideEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lines = entries.map((entry) => JSON.stringify(entry));
    let offset = await this.write(lines);
    const added = entries.map((entry, index) => {
      const id = setAsideIdOf(lines[index]);
      const length = Buffer.byteLength(lines[index], 'utf8');
      this.open.set(id, { offset, length });
      offset += length + 1;
      return { id, entry };
    });
    this.recentEntries = [...this.recentEntries, ...added].slice(-RECENT_LIMIT);
  }

  /**
   * The open entry named `id`, or undefined when none is open by that name. One older than the
   * admin view is read from the file (rejects when it cannot be).
   */
  async find(id: string): Promise<OpenSetAside | undefined> {
    const recent = this.recentEntries.find((open) => open.id === id);
    if (recent) return recent;
    if (!this.open.has(id)) return undefined;
    const [found] = await this.readOpen([id], this.open);
    return found;
  }

  /**
   * Closes the entry `id` with a synced resolution line; rejects when it is not on disk (the
   * entry stays open). The entry's line itself is kept.
   */
  async resolve(id: string, action: SetAsideAction, at: number = Date.now()): Promise<void> {
    const resolution: SetAsideResolution = { resolved: id, action, at };
    await this.write([JSON.stringify(resolution)]);
    this.open.delete(id);
    this.recentEntries = this.recentEntries.filter((open) => open.id !== id);
    if (this.recentEntries.length < Math.min(RECENT_LIMIT, this.open.size)) await this.refill();
  }

  /** Brings the view back to the newest open entries, reading those it lacks from the file. */
  private async refill(): Promise<void> {
    const held = new Map(this.recentEntries.map((open) => [open.id, open]));
    const wanted = newestOf(this.open.keys());
    try {
      const read = await this.readOpen(
        wanted.filter((id) => !held.has(id)),
        this.open,
      );
      const fresh = new Map(read.map((open) => [open.id, open]));
      this.recentEntries = wanted.flatMap((id) => held.get(id) ?? fresh.get(id) ?? []);
    } catch (error) {
      // The resolution is on disk: only the view is short, until the next close refills it.
      new Logger('Journal').warn(
        `Could not read older set-aside entries from ${this.files.directory}/${SET_ASIDE_LOG} for the admin view: ${describeError(error)}`,
      );
    }
  }

  /** The entries `ids` names, read from where `open` says their lines are, in that order. */
  private async readOpen(
    ids: readonly string[],
    open: ReadonlyMap<string, LineAt>,
  ): Promise<OpenSetAside[]> {
    if (ids.length === 0) return [];
    const lines = await this.files.readRanges(
      SET_ASIDE_LOG,
      ids.map((id) => open.get(id) as LineAt),
    );
    return ids.map((id, index) => {
      const line = lines[index].toString('utf8');
      // The id is the line's hash: a log rewritten under the running instance (restored from
      // a backup, edited) has other bytes there, which must not pass for the entry.
      if (setAsideIdOf(line) !== id) {
        throw new Error(
          `${this.files.directory}/${SET_ASIDE_LOG} changed under the running instance: entry ${id} is no longer where it was written; restart to read it again`,
        );
      }
      return { id, entry: JSON.parse(line) as SetAsideEntry };
    });
  }

  /** Appends the lines at the end of the file; resolves with the offset of the first. */
  private async write(lines: readonly string[]): Promise<number> {
    return this.turns.runExclusive(async () => {
      const { file, size } = await this.files.openForAppend(SET_ASIDE_LOG);
      // After a line torn by a crash, a newline first: the new line is one of its own.
      const lead = this.tornTail ? '\n' : '';
      const data = Buffer.from(lead + lines.map((line) => `${line}\n`).join(''), 'utf8');
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
      this.tornTail = false;
      return size + lead.length;
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

  /** Open entries, all of them (the view lists the newest RECENT_LIMIT). */
  get count(): number {
    return this.open.size;
  }
}

/** The last RECENT_LIMIT of `ids`, in their order. */
function newestOf(ids: Iterable<string>): string[] {
  const newest: string[] = [];
  for (const id of ids) {
    newest.push(id);
    if (newest.length > RECENT_LIMIT) newest.shift();
  }
  return newest;
}

/** `bytes` as the set-aside log keeps them: text when they are valid UTF-8, else base64. */
export function rawField(bytes: Buffer): Pick<SetAsideEntry, 'raw' | 'rawBase64'> {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes)
    ? { raw: text }
    : { rawBase64: bytes.toString('base64') };
}
