import { type MessageRecord } from '../message/message-record.js';
import { type RecordLocation } from './journal-ledger.js';

/** A record held in memory whose segment vanished: owed, but on no disk until journaled again. */
export interface OrphanRecord {
  record: MessageRecord;
  /** Where it was: the location the transcript still knows it by. */
  location: RecordLocation;
  /** It left memory meanwhile: once journaled again it is journal-only. */
  released: boolean;
}

function keyOf(location: RecordLocation): string {
  return `${location.segment}:${location.offset}`;
}

/**
 * For JournalIndex: records of segments that vanished. Orphans wait, in memory, to be journaled
 * again; once they are, their old location leads to the new one. Callers keep the location they
 * were given, so every lookup by location goes through `current` first.
 */
export class JournalMoves {
  private readonly moved = new Map<string, RecordLocation>();
  private readonly orphans = new Map<string, OrphanRecord>();

  /** Where a record is now: after every move of it (forgetting the moves, once `resolved`). */
  current(location: RecordLocation, resolved = false): RecordLocation {
    let at = location;
    for (let next = this.moved.get(keyOf(at)); next; next = this.moved.get(keyOf(at))) {
      if (resolved) this.moved.delete(keyOf(at));
      at = next;
    }
    return at;
  }

  orphan(record: MessageRecord, location: RecordLocation): void {
    this.orphans.set(keyOf(location), { record, location, released: false });
  }

  orphanAt(location: RecordLocation): OrphanRecord | undefined {
    return this.orphans.get(keyOf(location));
  }

  /** Lets go of the orphan at `location`; false when there is none. */
  dropOrphan(location: RecordLocation): boolean {
    return this.orphans.delete(keyOf(location));
  }

  /** Oldest orphaned first. */
  orphaned(): OrphanRecord[] {
    return [...this.orphans.values()];
  }

  /** `orphan` is on disk again at `to`; false when it was let go of meanwhile. */
  moveOrphan(orphan: OrphanRecord, to: RecordLocation): boolean {
    const key = keyOf(orphan.location);
    if (this.orphans.get(key) !== orphan) return false;
    this.orphans.delete(key);
    this.moved.set(key, to);
    return true;
  }
}
