import { describeError } from '../common/errors/describe-error.js';
import { type BlockedFiles } from './blocked-files.js';
import { type JournalIndex } from './journal-index.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import { type SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry } from './set-aside-entry.js';

/**
 * Bad lines found when a journal is adopted go to the set-aside log, with their bytes, before
 * their segment can go. When the log cannot be written (a full disk, set-aside.jsonl a
 * directory), the lines wait here and pin their segments, the log is listed as blocked, and
 * every later round tries again: the good records of those segments replay meanwhile.
 */
export class BadLineKeeper {
  private waiting: SetAsideEntry[] = [];

  constructor(
    private readonly setAsideLog: SetAsideLog,
    private readonly index: JournalIndex,
    private readonly blocked: BlockedFiles,
    private readonly onSetAside: (entries: readonly SetAsideEntry[]) => void,
  ) {}

  /**
   * Sets `entries` aside (their segments must be in the index), with those still waiting.
   * Returns how many lines were written, and the segments that owe nothing any more now that
   * their lines are kept.
   */
  async keep(entries: readonly SetAsideEntry[]): Promise<{ kept: number; emptied: string[] }> {
    const pinned = this.waiting;
    const all = [...pinned, ...entries];
    if (all.length === 0) return { kept: 0, emptied: [] };
    if (this.blocked.due(SET_ASIDE_LOG)) {
      try {
        await this.setAsideLog.append(all);
        this.blocked.clear(SET_ASIDE_LOG);
        this.waiting = [];
        this.onSetAside(all);
        const emptied = new Set<string>();
        for (const entry of pinned) {
          if (this.index.unpin(entry.source, entry.offset ?? 0)) emptied.add(entry.source);
        }
        return { kept: all.length, emptied: [...emptied] };
      } catch (error) {
        this.blocked.block(SET_ASIDE_LOG, `cannot be written: ${describeError(error)}`, all.length);
      }
    }
    for (const entry of entries) this.index.pin(entry.source, entry.offset ?? 0);
    this.waiting = all;
    return { kept: 0, emptied: [] };
  }

  /** Lines waiting for the log, all segments together. */
  get count(): number {
    return this.waiting.length;
  }
}

/**
 * For BadLineKeeper's `onSetAside`: a refused record is kept whole, a bad line as its bytes, and
 * each kind is reported under its own reason.
 */
export function reportByReason(
  onSetAside: (entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt') => void,
): (entries: readonly SetAsideEntry[]) => void {
  return (entries) => {
    const refused = entries.filter((entry) => entry.record !== undefined);
    const bad = entries.filter((entry) => entry.record === undefined);
    if (bad.length > 0) onSetAside(bad, 'corrupt');
    if (refused.length > 0) onSetAside(refused, 'refused');
  };
}
