import { JournalLedger, type RecordLocation } from './journal-ledger.js';
import { type OrphanRecord } from './journal-moves.js';

/**
 * The journal's ledger (JournalLedger: what each segment and session owes) and what became of
 * the records of segments that vanished under the running instance: those memory held wait as
 * orphans to be journaled again, the others are counted lost.
 */
export class JournalIndex extends JournalLedger {
  private lost = 0;

  /**
   * `segment` vanished from the disk: what memory holds of it becomes orphans (to be journaled
   * again), what only the disk held is lost. Returns how many of each.
   */
  dropSegment(segment: string): { orphaned: number; lost: number } {
    const state = this.segments.get(segment);
    if (!state) return { orphaned: 0, lost: 0 };
    let lost = 0;
    for (const offset of state.live) {
      const held = state.held.get(offset);
      if (held) this.moves.orphan(held, { segment, offset, length: 0 });
      else lost += 1;
      // By the record's own session: one neither held nor on the journal-only list (found at
      // start, its entry not added) is owed no more either, and must not stay counted.
      const sessionId = state.sessions.get(offset);
      if (sessionId !== undefined) this.countLive(sessionId, -1);
    }
    this.journalOnly.removeSegment(segment);
    this.segments.delete(segment);
    this.lost += lost;
    return { orphaned: state.live.size - lost, lost };
  }

  /** Records held in memory whose segment vanished, oldest orphaned first. */
  orphaned(): OrphanRecord[] {
    return this.moves.orphaned();
  }

  /**
   * An orphan is on disk again at `location`. False when it was stored meanwhile (nothing is
   * owed for that copy).
   */
  rejournaled(orphan: OrphanRecord, location: RecordLocation): boolean {
    if (!this.moves.moveOrphan(orphan, location)) return false;
    const { record } = orphan;
    this.addLive(
      record.sessionId,
      record.acceptedAt,
      location,
      orphan.released ? undefined : record,
    );
    if (orphan.released) {
      this.addJournalOnly([
        {
          id: record.id,
          sessionId: record.sessionId,
          orderKey: record.orderKey,
          acceptedAt: record.acceptedAt,
          location,
          record,
        },
      ]);
    }
    return true;
  }

  /** Whether the record journaled at `location` is on disk now: not while it is an orphan. */
  isOnDisk(location: RecordLocation): boolean {
    return this.moves.orphanAt(this.moves.current(location)) === undefined;
  }

  /** Records owed whose segment vanished while memory held them: on no disk until journaled again. */
  get orphanedRecords(): number {
    return this.moves.orphaned().length;
  }

  /**
   * `count` records counted lost with their segment are on disk again: the segment's name
   * finds the very file it was (the operator moved the directory back). They are no longer
   * counted: lostRecords says what is gone, not what was out of reach for a while.
   */
  foundAgain(count: number): void {
    this.lost = Math.max(0, this.lost - count);
  }

  /** Records whose only copy was a segment that vanished and has not been found again, since start. */
  get lostRecords(): number {
    return this.lost;
  }
}
