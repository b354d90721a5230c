import { describeError } from '../common/errors/describe-error.js';
import { type BlockedFiles } from './blocked-files.js';
import { type JournalFiles } from './journal-files.js';
import { type JournalIndex } from './journal-index.js';
import { type DiskEntry } from './journal-only-list.js';
import { type SegmentCache, readBack } from './journal-reader.js';
import { type JournalEvents } from './journal-events.js';
import { type JournaledRecord } from './journaled-record.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import { type SetAsideLog } from './set-aside-log.js';
import { rawField, type SetAsideEntry } from './set-aside-entry.js';

/** What the drain may store now, and why it stops after it (null: nothing waits). */
export interface DrainBatch {
  batch: JournaledRecord[];
  waiting: Error | null;
  /** Bad lines now in the set-aside log: the journal owes them no more (the caller resolves). */
  setAside: DiskEntry[];
  /**
   * Lines of redacted messages, scrubbed: stored before they were, so owed no more (the caller
   * resolves), and nothing of them is set aside.
   */
  scrubbed: DiskEntry[];
}

/**
 * Reads the drain's next records back from disk, telling corruption (a bad line: set aside
 * with its bytes) from an outage (a segment that does not answer: its records stay owed, in
 * order, and it is listed as blocked and tried again after a backoff).
 */
export class DrainReader {
  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    // Whole segments kept in memory, shared with the Journal (which drops removed ones).
    private readonly cache: SegmentCache,
    private readonly setAsideLog: SetAsideLog,
    private readonly blocked: BlockedFiles,
    private readonly events: Pick<JournalEvents, 'setAside'>,
  ) {}

  /**
   * What can be stored of `entries` (oldest first) now: the records read back before the first
   * that must wait, and why it waits. A bad line is set aside with its bytes, so that it cannot
   * stall the drain; a segment that does not answer is an outage (nothing says its records are
   * bad): they stay owed and their segment is tried again after a backoff.
   */
  async read(entries: DiskEntry[]): Promise<DrainBatch> {
    let end = entries.findIndex(
      (entry) => !entry.record && !this.blocked.due(entry.location.segment),
    );
    let waiting: Error | null =
      end < 0 ? null : this.unreadable(entries[end].location.segment, true);
    if (end >= 0) entries = entries.slice(0, end);
    end = entries.length;
    const unread = entries.filter((entry) => !entry.record);
    const results = unread.length > 0 ? await this.readBackOwed(unread) : [];
    const read = new Map(unread.map((entry, index) => [entry, results[index]]));
    const batch: { at: number; journaled: JournaledRecord }[] = [];
    const bad: { entry: DiskEntry; at: number; set: SetAsideEntry }[] = [];
    const scrubbed: DiskEntry[] = [];
    for (const [at, entry] of entries.entries()) {
      const result = entry.record
        ? { kind: 'record' as const, record: entry.record }
        : read.get(entry);
      if (!result || result.kind === 'unreadable') {
        waiting = this.unreadable(entry.location.segment, false);
        end = at;
        break;
      }
      if (result.kind === 'record') {
        batch.push({ at, journaled: { record: result.record, location: entry.location } });
        continue;
      }
      if (result.kind === 'scrubbed') {
        scrubbed.push(entry);
        continue;
      }
      bad.push({ entry, at, set: badEntryOf(entry, result.reason, result.bytes) });
    }
    let setAside: DiskEntry[] = [];
    if (bad.length > 0) {
      const kept = await this.keepBad(bad.map(({ set }) => set));
      if (kept) {
        setAside = bad.map(({ entry }) => entry);
      } else {
        // Order within the session: nothing after a bad line that is not kept yet is stored.
        end = bad[0].at;
        waiting = new Error(
          `a bad line cannot be set aside: ${this.blocked.reasonOf(SET_ASIDE_LOG) ?? 'unknown'}`,
        );
      }
    }
    return {
      batch: batch.filter(({ at }) => at < end).map(({ journaled }) => journaled),
      waiting,
      setAside,
      scrubbed,
    };
  }

  /** Reads back `entries`, telling the blocked list which segments answered and which did not. */
  private async readBackOwed(entries: DiskEntry[]) {
    const results = await readBack(this.files, entries, this.cache, cacheableIn(this.index));
    const answered = new Set<string>();
    const failed = new Map<string, string>();
    results.forEach((result, index) => {
      const segment = entries[index].location.segment;
      if (result.kind === 'unreadable') failed.set(segment, result.reason);
      else answered.add(segment);
    });
    // One failed attempt per segment, however many of its records were asked for.
    for (const [segment, reason] of failed) {
      this.blocked.block(segment, reason, this.index.liveIn(segment));
    }
    for (const segment of answered) this.blocked.clear(segment);
    return results;
  }

  private unreadable(segment: string, waitingOut: boolean): Error {
    const reason = this.blocked.reasonOf(segment) ?? 'segment unreadable';
    return new Error(
      `${segment}: ${reason}${waitingOut ? ' (tried again after a backoff)' : ''}; its records stay owed`,
    );
  }

  /** Writes bad lines to the set-aside log; false (and the log listed as blocked) when it fails. */
  private async keepBad(entries: SetAsideEntry[]): Promise<boolean> {
    if (!this.blocked.due(SET_ASIDE_LOG)) return false;
    try {
      await this.setAsideLog.append(entries);
    } catch (error) {
      this.blocked.block(
        SET_ASIDE_LOG,
        `cannot be written: ${describeError(error)}`,
        entries.length,
      );
      return false;
    }
    this.blocked.clear(SET_ASIDE_LOG);
    this.events.setAside(entries, 'corrupt');
    return true;
  }
}

/**
 * Only a sealed segment stays as it is: the writer cuts a torn write back off the active one
 * and writes the next batch at the same offsets, which a copy read meanwhile would not show.
 */
export function cacheableIn(index: JournalIndex): (segment: string) => boolean {
  return (segment) => index.isSealed(segment);
}

function badEntryOf(entry: DiskEntry, reason: string, bytes: Buffer): SetAsideEntry {
  return {
    at: Date.now(),
    reason,
    source: entry.location.segment,
    offset: entry.location.offset,
    sessionId: entry.sessionId,
    messageId: entry.id,
    ...rawField(bytes),
  };
}
