import { type MessageRecord } from '../message/message-record.js';

/** Where one record's line sits in the journal. */
export interface RecordLocation {
  segment: string;
  offset: number;
  /** Bytes of the line, its newline included. */
  length: number;
}

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

interface SegmentState {
  /**
   * Offsets of the records journaled in it that are neither stored nor set aside. Offsets, not
   * a count: a record resolved twice (by two paths that both stored it) must not let a segment
   * go while another record in it is still owed.
   */
  live: Set<number>;
  bytes: number;
  /** No more records will be written to it. */
  sealed: boolean;
  oldestAcceptedAt: number;
}

function sameLocation(left: RecordLocation, right: RecordLocation): boolean {
  return left.segment === right.segment && left.offset === right.offset;
}

/**
 * What the journal holds, in memory: per segment which of its records are still owed (a
 * segment that owes none can go), per session how many, and the session's records that only
 * the disk holds, in acceptance order, for the drain to read back.
 */
export class JournalIndex {
  private readonly segments = new Map<string, SegmentState>();
  private readonly liveBySession = new Map<string, number>();
  private readonly diskOnly = new Map<string, Map<string, DiskEntry>>();
  // The order key of the newest disk-only entry added per session.
  private readonly lastDiskKey = new Map<string, string>();

  /** A segment begun (by the writer, or found at start and then `sealed`). */
  addSegment(segment: string, sealed: boolean): void {
    if (!this.segments.has(segment)) {
      this.segments.set(segment, {
        live: new Set(),
        bytes: 0,
        sealed,
        oldestAcceptedAt: Infinity,
      });
    }
  }

  /** A record written (or found) at `location`, not yet stored. */
  addLive(sessionId: string, acceptedAt: number, location: RecordLocation): void {
    const segment = this.segmentOf(location.segment);
    if (segment.live.has(location.offset)) return;
    segment.live.add(location.offset);
    segment.bytes = Math.max(segment.bytes, location.offset + location.length);
    segment.oldestAcceptedAt = Math.min(segment.oldestAcceptedAt, acceptedAt);
    this.liveBySession.set(sessionId, (this.liveBySession.get(sessionId) ?? 0) + 1);
  }

  /** Bytes of a segment that hold no record (a bad line): they count for the size on disk. */
  addBytes(segment: string, end: number): void {
    const state = this.segmentOf(segment);
    state.bytes = Math.max(state.bytes, end);
  }

  /**
   * Entries only the disk holds from now on, appended after the session's others: callers add
   * them in acceptance order (the oldest leave memory first; at start they are sorted first).
   * Returns the entries not added because the session has another copy of the message on disk
   * already (two instances raced one client id; a file imported twice): those are owed
   * nothing, and the caller resolves them.
   */
  addDiskOnly(entries: readonly DiskEntry[]): DiskEntry[] {
    const unsorted = new Set<string>();
    const copies: DiskEntry[] = [];
    for (const entry of entries) {
      let session = this.diskOnly.get(entry.sessionId);
      if (!session) {
        session = new Map();
        this.diskOnly.set(entry.sessionId, session);
      }
      const known = session.get(entry.id);
      if (known) {
        if (!sameLocation(known.location, entry.location)) copies.push(entry);
        continue;
      }
      const last = this.lastDiskKey.get(entry.sessionId);
      if (last !== undefined && last > entry.orderKey) unsorted.add(entry.sessionId);
      else this.lastDiskKey.set(entry.sessionId, entry.orderKey);
      session.set(entry.id, entry);
    }
    // Records of another instance found later (an adopted journal) may be older than these.
    for (const sessionId of unsorted) {
      const sorted = [...(this.diskOnly.get(sessionId)?.values() ?? [])].sort((left, right) =>
        left.orderKey < right.orderKey ? -1 : left.orderKey > right.orderKey ? 1 : 0,
      );
      this.diskOnly.set(sessionId, new Map(sorted.map((entry) => [entry.id, entry])));
    }
    return copies;
  }

  /**
   * Records stored or set aside: they are owed no more. Returns the segments left with no
   * record owed, which the caller may delete once sealed.
   */
  resolve(
    records: readonly { id: string; sessionId: string; location: RecordLocation }[],
  ): string[] {
    const emptied: string[] = [];
    for (const record of records) {
      const segment = this.segments.get(record.location.segment);
      // Resolved already (or never journaled here): nothing more is owed for it.
      if (!segment?.live.delete(record.location.offset)) continue;
      const session = this.diskOnly.get(record.sessionId);
      const entry = session?.get(record.id);
      // Another copy of the same message (two instances raced one client id) is not this one.
      if (entry && sameLocation(entry.location, record.location)) session?.delete(record.id);
      if (session?.size === 0) {
        this.diskOnly.delete(record.sessionId);
        this.lastDiskKey.delete(record.sessionId);
      }
      const live = (this.liveBySession.get(record.sessionId) ?? 0) - 1;
      if (live > 0) this.liveBySession.set(record.sessionId, live);
      else this.liveBySession.delete(record.sessionId);
      if (segment.live.size === 0) emptied.push(record.location.segment);
    }
    return emptied;
  }

  /**
   * Keeps `segment` on disk for the bad line at `offset`: it is not deleted while the line is
   * neither stored nor set aside (the set-aside log cannot be written now). Counts as owed in
   * the segment only: it is no session's record.
   */
  pin(segment: string, offset: number): void {
    this.segmentOf(segment).live.add(offset);
  }

  /** The bad line at `offset` is set aside; true when `segment` owes nothing more. */
  unpin(segment: string, offset: number): boolean {
    const state = this.segments.get(segment);
    if (!state) return false;
    state.live.delete(offset);
    return state.live.size === 0;
  }

  seal(segment: string): void {
    const state = this.segments.get(segment);
    if (state) state.sealed = true;
  }

  isSealed(segment: string): boolean {
    return this.segments.get(segment)?.sealed ?? false;
  }

  liveIn(segment: string): number {
    return this.segments.get(segment)?.live.size ?? 0;
  }

  removeSegment(segment: string): void {
    this.segments.delete(segment);
  }

  /** Up to `limit` of the session's disk-only entries, oldest first. */
  diskOnlyOf(sessionId: string, limit: number): DiskEntry[] {
    const entries: DiskEntry[] = [];
    for (const entry of this.diskOnly.get(sessionId)?.values() ?? []) {
      if (entries.length === limit) break;
      entries.push(entry);
    }
    return entries;
  }

  /** The session's disk-only entry of this id, if it has one. */
  findDiskOnly(sessionId: string, id: string): DiskEntry | undefined {
    return this.diskOnly.get(sessionId)?.get(id);
  }

  hasDiskOnly(sessionId: string): boolean {
    return this.diskOnly.has(sessionId);
  }

  sessionsWithDiskOnly(): string[] {
    return [...this.diskOnly.keys()];
  }

  /** Records owed, all sessions. */
  get liveRecords(): number {
    let total = 0;
    for (const count of this.liveBySession.values()) total += count;
    return total;
  }

  liveBySessions(): { sessionId: string; messages: number }[] {
    return [...this.liveBySession]
      .map(([sessionId, messages]) => ({ sessionId, messages }))
      .sort((left, right) =>
        left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0,
      );
  }

  get bytes(): number {
    let total = 0;
    for (const segment of this.segments.values()) total += segment.bytes;
    return total;
  }

  /** When the oldest record of a segment that still owes records was accepted. */
  get oldestAcceptedAt(): number | null {
    let oldest = Infinity;
    for (const segment of this.segments.values()) {
      if (segment.live.size > 0) oldest = Math.min(oldest, segment.oldestAcceptedAt);
    }
    return oldest === Infinity ? null : oldest;
  }

  private segmentOf(name: string): SegmentState {
    this.addSegment(name, false);
    return this.segments.get(name) as SegmentState;
  }
}
