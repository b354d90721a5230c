import { type MessageRecord } from '../message/message-record.js';
import { type RecordLocation } from './journal-ledger.js';

/** A journaled record that only the disk holds now (evicted from memory, or found at start). */
export interface DiskEntry {
  id: string;
  sessionId: string;
  orderKey: string;
  acceptedAt: number;
  location: RecordLocation;
  /**
   * The record itself, when it was read already (found at start) and memory allows: the drain
   * then need not read and check its line again. Dropped once it is stored.
   */
  record?: MessageRecord;
}

export function sameLocation(left: RecordLocation, right: RecordLocation): boolean {
  return left.segment === right.segment && left.offset === right.offset;
}

/**
 * For JournalLedger: per session, the records only the disk holds, by id, in acceptance order,
 * for the drain to read back. What is owed, and where, the ledger keeps; this only lists.
 */
export class JournalOnlyList {
  private readonly sessions = new Map<string, Map<string, DiskEntry>>();
  // The order key of the newest entry added per session.
  private readonly lastKey = new Map<string, string>();

  /**
   * Appends `entries` after their sessions' others, sorting a session again only when one came
   * older than its newest. Returns those whose id the session lists already at another
   * location (another copy of the message): not added.
   */
  add(entries: readonly DiskEntry[]): DiskEntry[] {
    const unsorted = new Set<string>();
    const copies: DiskEntry[] = [];
    for (const entry of entries) {
      let session = this.sessions.get(entry.sessionId);
      if (!session) {
        session = new Map();
        this.sessions.set(entry.sessionId, session);
      }
      const known = session.get(entry.id);
      if (known) {
        if (!sameLocation(known.location, entry.location)) copies.push(entry);
        continue;
      }
      const last = this.lastKey.get(entry.sessionId);
      if (last !== undefined && last > entry.orderKey) unsorted.add(entry.sessionId);
      else this.lastKey.set(entry.sessionId, entry.orderKey);
      session.set(entry.id, entry);
    }
    // Records of another instance found later (an adopted journal) may be older than these.
    for (const sessionId of unsorted) {
      const sorted = [...(this.sessions.get(sessionId)?.values() ?? [])].sort((left, right) =>
        left.orderKey < right.orderKey ? -1 : left.orderKey > right.orderKey ? 1 : 0,
      );
      this.sessions.set(sessionId, new Map(sorted.map((entry) => [entry.id, entry])));
    }
    return copies;
  }

  /** The record at `location` is owed no more: its entry goes, not another copy's. */
  remove(record: { id: string; sessionId: string; location: RecordLocation }): void {
    const session = this.sessions.get(record.sessionId);
    const entry = session?.get(record.id);
    // Another copy of the same message (two instances raced one client id) is not this one.
    if (entry && sameLocation(entry.location, record.location)) session?.delete(record.id);
    if (session?.size === 0) this.forgetSession(record.sessionId);
  }

  /** Every entry in `segment` goes (it vanished). */
  removeSegment(segment: string): void {
    for (const [sessionId, session] of this.sessions) {
      for (const [id, entry] of session) {
        if (entry.location.segment === segment) session.delete(id);
      }
      if (session.size === 0) this.forgetSession(sessionId);
    }
  }

  /** Up to `limit` of the session's entries, oldest first. */
  of(sessionId: string, limit: number): DiskEntry[] {
    const entries: DiskEntry[] = [];
    for (const entry of this.sessions.get(sessionId)?.values() ?? []) {
      if (entries.length === limit) break;
      entries.push(entry);
    }
    return entries;
  }

  find(sessionId: string, id: string): DiskEntry | undefined {
    return this.sessions.get(sessionId)?.get(id);
  }

  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  sessionIds(): string[] {
    return [...this.sessions.keys()];
  }

  private forgetSession(sessionId: string): void {
    this.sessions.delete(sessionId);
    this.lastKey.delete(sessionId);
  }
}
