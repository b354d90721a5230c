import { type MessageRecord } from '../message/message-record.js';
import { JournalMoves, type OrphanRecord } from './journal-moves.js';

export type { OrphanRecord } from './journal-moves.js';

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
  /**
   * The records of `live` that memory still holds (the writer's, until they are stored or leave
   * memory), by offset: the same objects the transcript holds, so keeping them costs no copy.
   * Should the segment vanish, these can be journaled again; the others are lost with it.
   */
  held: Map<number, MessageRecord>;
  /**
   * The session of each record of `live` (a pinned bad line has none): what it counts against
   * in liveBySession, whether memory, the disk-only list or neither holds it.
   */
  sessions: Map<number, string>;
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
  private readonly moves = new JournalMoves();
  private lost = 0;

  /** A segment begun (by the writer, or found at start and then `sealed`). */
  addSegment(segment: string, sealed: boolean): void {
    if (!this.segments.has(segment)) {
      this.segments.set(segment, {
        live: new Set(),
        bytes: 0,
        sealed,
        oldestAcceptedAt: Infinity,
        held: new Map(),
        sessions: new Map(),
      });
    }
  }

  /** A record written (or found) at `location`, not yet stored; `held` while memory has it. */
  addLive(
    sessionId: string,
    acceptedAt: number,
    location: RecordLocation,
    held?: MessageRecord,
  ): void {
    const segment = this.segmentOf(location.segment);
    if (segment.live.has(location.offset)) return;
    segment.live.add(location.offset);
    if (held) segment.held.set(location.offset, held);
    segment.sessions.set(location.offset, sessionId);
    segment.bytes = Math.max(segment.bytes, location.offset + location.length);
    segment.oldestAcceptedAt = Math.min(segment.oldestAcceptedAt, acceptedAt);
    this.countLive(sessionId, 1);
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
    for (const given of entries) {
      const location = this.moves.current(given.location);
      const entry = location === given.location ? given : { ...given, location };
      const orphan = this.moves.orphanAt(entry.location);
      if (orphan) {
        // On no disk right now: it becomes disk-only once journaled again.
        orphan.released = true;
        continue;
      }
      this.segments.get(entry.location.segment)?.held.delete(entry.location.offset);
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
    for (const given of records) {
      const location = this.moves.current(given.location, true);
      const record = location === given.location ? given : { ...given, location };
      if (this.moves.dropOrphan(record.location)) continue;
      const segment = this.segments.get(record.location.segment);
      // Resolved already (or never journaled here): nothing more is owed for it.
      if (!segment?.live.delete(record.location.offset)) continue;
      segment.held.delete(record.location.offset);
      segment.sessions.delete(record.location.offset);
      const session = this.diskOnly.get(record.sessionId);
      const entry = session?.get(record.id);
      // Another copy of the same message (two instances raced one client id) is not this one.
      if (entry && sameLocation(entry.location, record.location)) session?.delete(record.id);
      if (session?.size === 0) {
        this.diskOnly.delete(record.sessionId);
        this.lastDiskKey.delete(record.sessionId);
      }
      this.countLive(record.sessionId, -1);
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
      // By the record's own session: one neither held nor on the disk-only list (found at
      // start, its entry not added) is owed no more either, and must not stay counted.
      const sessionId = state.sessions.get(offset);
      if (sessionId !== undefined) this.countLive(sessionId, -1);
    }
    for (const [sessionId, session] of this.diskOnly) {
      for (const [id, entry] of session) {
        if (entry.location.segment === segment) session.delete(id);
      }
      if (session.size === 0) {
        this.diskOnly.delete(sessionId);
        this.lastDiskKey.delete(sessionId);
      }
    }
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
      this.addDiskOnly([
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

  /** Records whose only copy was a segment that vanished, since start. */
  get lostRecords(): number {
    return this.lost;
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

  private countLive(sessionId: string, change: number): void {
    const live = (this.liveBySession.get(sessionId) ?? 0) + change;
    if (live > 0) this.liveBySession.set(sessionId, live);
    else this.liveBySession.delete(sessionId);
  }

  private segmentOf(name: string): SegmentState {
    this.addSegment(name, false);
    return this.segments.get(name) as SegmentState;
  }
}
