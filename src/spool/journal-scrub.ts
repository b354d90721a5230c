import { type JournalFiles } from './journal-files.js';
import { type JournalIndex } from './journal-index.js';
import { type SegmentCache } from './journal-reader.js';
import { type JournalWriter } from './journal-writer.js';
import { type OwedRecords } from './owed-records.js';
import { scrubSegments } from './segment-scrub.js';
import { type SetAsideLog } from './set-aside-log.js';

/**
 * Redaction's side of the journal: every copy of a redacted message goes from the spool
 * directory (segments, the set-aside log, and what memory held of a segment that vanished). Its
 * own part because it alone rewrites lines in place, in the writer's turn; what it scrubs is let
 * go of through OwedRecords like anything else. Knows nothing of Nest or logs.
 */
export class JournalScrub {
  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    private readonly writer: JournalWriter,
    private readonly setAsideLog: SetAsideLog,
    // Whole segments kept in memory for reading back: a rewritten segment leaves it.
    private readonly cache: SegmentCache,
    private readonly owed: OwedRecords,
  ) {}

  /**
   * Removes for good every copy the spool directory holds of the messages `ids` (they were
   * redacted): each of their lines in every segment, whosever, is overwritten in place by a
   * scrubbed line of the same length (scrubSegments), and each set-aside entry holding their
   * record or bytes keeps its id, time and reason without them (SetAsideLog.scrub). Only for
   * messages the database has stored: whatever the journal owed for them is let go of, and
   * what memory held of a segment that vanished is not journaled again. Idempotent; rejects
   * when a file cannot be read or written (what was scrubbed stays so: call it again).
   */
  async scrub(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const wanted = new Set(ids);
    // In the writer's turn, so that no batch is on its way to disk with them among its orphans.
    await this.writer.inTurn(() => Promise.resolve(this.dropOrphans(wanted)));
    const scrubbed = await scrubSegments(
      {
        files: this.files,
        turn: (work) => this.writer.inTurn(work),
        rewritten: (segment) => this.cache.delete(segment),
      },
      wanted,
    );
    await this.owed.resolveEntries(
      scrubbed.flatMap(({ id, sessionId, location }) =>
        sessionId !== undefined ? [{ id, sessionId, location }] : [],
      ),
    );
    await this.setAsideLog.scrub(wanted);
  }

  /** What memory held of the messages `ids` when their segment vanished: owed no more. */
  private dropOrphans(ids: ReadonlySet<string>): void {
    const orphans = this.index.orphaned().filter(({ record }) => ids.has(record.id));
    this.index.resolve(
      orphans.map(({ record, location }) => ({
        id: record.id,
        sessionId: record.sessionId,
        location,
      })),
    );
  }
}
