import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { type JournalOnlyMessages, type KeyWindow } from '../message/held-messages.js';
import { cacheableIn } from './drain-reader.js';
import { type JournalFiles } from './journal-files.js';
import { type JournalIndex } from './journal-index.js';
import { type SegmentCache, readBack } from './journal-reader.js';
import { selectWindow } from './journal-window.js';
import { RecordUnreadableError } from './record-unreadable.error.js';

/**
 * What the transcript's reads ask of the journal: one journal-only record (a retry's lookup), or
 * the journal-only records a page may list. Reads only: nothing is let go of or set aside here
 * (the drain does, and only it knows whether the database took a record meanwhile), so it
 * needs neither the writer nor the set-aside log. Knows nothing of Nest or logs.
 */
export class JournalLookup {
  private readonly cacheable: (segment: string) => boolean;

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    // Whole segments kept in memory for reading back, shared with the drain's reader.
    private readonly cache: SegmentCache,
  ) {
    this.cacheable = cacheableIn(index);
  }

  /**
   * The session's journal-only record of this id, read back from disk; undefined when none (or it
   * is corrupt: the drain sets it aside). Rejects with RecordUnreadableError while its file
   * cannot be read.
   */
  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    const entry = this.index.findJournalOnly(sessionId, id);
    if (!entry) return undefined;
    const [found] = await readBack(this.files, [entry], this.cache, this.cacheable);
    // Owed but unreadable now (an outage of its file): "not there" would let a retry of its
    // client id be accepted afresh, with a new time, ahead of the original in the drain.
    if (found.kind === 'unreadable') throw new RecordUnreadableError(id, found.reason);
    return found.kind === 'record' ? found.record : undefined;
  }

  /**
   * The session's journal-only records a page of `window` may list (see selectWindow), read back.
   * A record not read back is left out, but named (`unreadable`, the nearest the cursor): one
   * in a file that cannot be read now is owed all the same, and one whose line is damaged is
   * counted (`total`) until the drain sets it aside, so a page that would list either must not
   * be answered as though it were not there. Nothing is set aside here: the drain does, and
   * only it knows whether the database took the record meanwhile.
   */
  async readWindow(
    sessionId: string,
    window: KeyWindow,
    maxBytes: number,
  ): Promise<JournalOnlyMessages> {
    const all = this.index.journalOnlyOf(sessionId, Number.MAX_SAFE_INTEGER);
    const { entries, horizon, beyondCursor } = selectWindow(all, window, maxBytes);
    const unread = entries.filter((entry) => !entry.record);
    const results =
      unread.length > 0 ? await readBack(this.files, unread, this.cache, this.cacheable) : [];
    const read = new Map(unread.map((entry, index) => [entry, results[index]]));
    const records = entries.flatMap((entry) => {
      if (entry.record) return [entry.record];
      const result = read.get(entry);
      return result?.kind === 'record' ? [result.record] : [];
    });
    // A scrubbed line is a redacted message's, stored: not missing, only not listed from here.
    const missing = unread.filter(
      (entry) => !['record', 'scrubbed'].includes(read.get(entry)?.kind ?? 'unreadable'),
    );
    const nearest = window.direction === 'forward' ? missing[0] : missing.at(-1);
    const damaged = nearest !== undefined && read.get(nearest)?.kind === 'bad';
    return {
      messages: records.map((record) => ({ record, status: AppendStatus.QUEUED })),
      horizon,
      beyondCursor,
      ...(nearest
        ? {
            unreadable: {
              id: nearest.id,
              orderKey: nearest.orderKey,
              ...(damaged ? { damaged: true } : {}),
            },
          }
        : {}),
      total: all.length,
    };
  }
}
