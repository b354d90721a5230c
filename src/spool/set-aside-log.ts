import { Logger } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { describeError, errorCode } from '../common/errors/describe-error.js';
import { type JournalFiles } from './journal-files.js';
import { readLineAt, scanLines } from './line-scan.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import {
  isEntry,
  isResolution,
  type OpenSetAside,
  type SetAsideAction,
  type SetAsideEntry,
  type SetAsideResolution,
  setAsideIdOf,
  valueOfLine,
} from './set-aside-entry.js';
import { copyHeldOf, linesToScrub, scrubbedEntry, withoutCopy } from './set-aside-scrub.js';

// Open entries kept whole in memory, the newest: what the admin view lists. The others are
// known by where their line is, and read from the file when an action names them.
export const RECENT_LIMIT = 100;
// Ids of messages scrubbed lately, kept to strip the entries of theirs set aside just after.
const REDACTED_LIMIT = 10_000;

/**
 * `set-aside.jsonl` in the spool directory: one JSON line per record or range set aside,
 * synced before the journal lets go of the original, so nothing is ever thrown away unseen.
 * An entry an operator dropped or re-drove is closed by a resolution line; it is counted and
 * shown no more.
 *
 * Memory holds where each open entry's line begins (its id and offset), and the newest
 * RECENT_LIMIT of them whole; closing one of those brings the next older one in, so the view
 * stays full while open entries are left. The file is read in chunks, never whole.
 */
export class SetAsideLog {
  // Every open entry's offset, in the order its line was written.
  private open = new Map<string, number>();
  private recentEntries: OpenSetAside[] = [];
  // One append at a time: one that fails cuts the file back to the size it found, which must
  // not throw away the synced entries of another that ran meanwhile.
  private readonly turns = new Mutex();
  // Messages scrubbed lately (see scrub), oldest first: a drain or an adoption that read one of
  // their lines before the scrub may set it aside after it.
  private readonly redacted = new Set<string>();

  constructor(private readonly files: JournalFiles) {}

  /** Reads what earlier runs set aside, for the counts and the admin view. */
  async load(): Promise<void> {
    const open = new Map<string, number>();
    let foreign = 0;
    try {
      await scanLines(this.files, SET_ASIDE_LOG, (bytes, at) => {
        const line = bytes.toString('utf8');
        const value = valueOfLine(line);
        // An empty line, or one torn by a crash (the entry was never counted as kept).
        if (value === undefined || value === null || typeof value !== 'object') return;
        if (isResolution(value)) open.delete(value.resolved);
        else if (isEntry(value)) open.set(setAsideIdOf(line), at.offset);
        else foreign += 1;
      });
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
    if (foreign > 0) {
      new Logger('Journal').warn(
        `${foreign} line(s) of ${this.files.directory}/${SET_ASIDE_LOG} are JSON but neither an entry nor a resolution: left as they are, neither counted nor listed`,
      );
    }
    this.open = open;
  }

  /** Appends and syncs `entries`; rejects when they are not safely on disk. */
  async append(entries: readonly SetAsideEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lines = entries.map((entry) =>
      JSON.stringify(copyHeldOf(entry, this.redacted) ? withoutCopy(entry) : entry),
    );
    let offset = await this.write(lines);
    const added = entries.map((entry, index) => {
      const id = setAsideIdOf(lines[index]);
      this.open.set(id, offset);
      offset += Buffer.byteLength(lines[index], 'utf8') + 1;
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

  /**
   * Removes for good what the log holds of the messages `ids` (they were redacted): each entry
   * holding their record or the bytes of their line is overwritten in place by a line of the
   * same length without them (scrubbedEntryLine), which keeps its id, time, reason and source,
   * so the resolutions that close it and every other line's offset stay as they were. An entry
   * of theirs set aside later in this run is written without them. Memory's copies (the admin
   * view, what a re-drive reads) lose them too. Rejects when the log cannot be read or written:
   * what was overwritten stays so, and a second call does the rest.
   */
  async scrub(ids: ReadonlySet<string>): Promise<void> {
    for (const id of ids) {
      this.redacted.delete(id);
      this.redacted.add(id);
    }
    for (const id of this.redacted) {
      if (this.redacted.size <= REDACTED_LIMIT) break;
      this.redacted.delete(id);
    }
    this.recentEntries = this.recentEntries.map((open) => {
      const messageId = copyHeldOf(open.entry, ids);
      return messageId
        ? { id: open.id, entry: scrubbedEntry(open.entry, open.id, messageId) }
        : open;
    });
    await this.turns.runExclusive(async () => {
      const found = await linesToScrub(this.files, ids);
      if (found.length === 0) return;
      const file = await this.files.openForOverwrite(SET_ASIDE_LOG);
      try {
        for (const { offset, line } of found) await file.write(Buffer.from(line, 'utf8'), offset);
        await file.sync();
      } finally {
        await file.close().catch(() => undefined);
      }
    });
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

  /** The entries `ids` names, read from where `open` says their lines begin, in that order. */
  private async readOpen(
    ids: readonly string[],
    open: ReadonlyMap<string, number>,
  ): Promise<OpenSetAside[]> {
    const read: OpenSetAside[] = [];
    for (const id of ids) {
      const bytes = await readLineAt(this.files, SET_ASIDE_LOG, open.get(id) as number);
      const line = bytes.toString('utf8');
      // The id is the line's hash: a log rewritten under the running instance (restored from
      // a backup, edited) has other bytes there, which must not pass for the entry.
      if (setAsideIdOf(line) !== id) {
        throw new Error(
          `${this.files.directory}/${SET_ASIDE_LOG} changed under the running instance: entry ${id} is no longer where it was written; restart to read it again`,
        );
      }
      read.push({ id, entry: valueOfLine(line) as SetAsideEntry });
    }
    return read;
  }

  /** Appends the lines at the end of the file; resolves with the offset of the first. */
  private async write(lines: readonly string[]): Promise<number> {
    return this.turns.runExclusive(async () => {
      const { file, size } = await this.files.openForAppend(SET_ASIDE_LOG);
      try {
        // After a line torn by a crash (or cut by hand, or by a failed write whose cut failed
        // too), a newline first: the new line must be one of its own. Looked at every time,
        // as the file may have changed since the last write.
        const lead = size > 0 && !(await this.endsInNewline(size)) ? '\n' : '';
        const data = Buffer.from(lead + lines.map((line) => `${line}\n`).join(''), 'utf8');
        try {
          await file.write(data, size);
          await file.sync();
        } catch (error) {
          // Leave no torn line for the next entry to be glued to.
          await file.truncate(size).catch(() => undefined);
          throw error;
        }
        return size + lead.length;
      } finally {
        // Once synced, the entries are kept: a failing close must not make the caller write
        // them again.
        await file.close().catch(() => undefined);
      }
    });
  }

  private async endsInNewline(size: number): Promise<boolean> {
    const [last] = await this.files.readRanges(SET_ASIDE_LOG, [{ offset: size - 1, length: 1 }]);
    return last[0] === 0x0a;
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
