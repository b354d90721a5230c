import { type MessageRecord } from '../message/message-record.js';
import { JournalOnlyList, type DiskEntry } from './journal-only-list.js';
import { JournalMoves } from './journal-moves.js';

/** Where one record's line sits in the journal. */
export interface RecordLocation {
  segment: string;
  offset: number;
  /** Bytes of the line, its newline included. */
  length: number;
}

export interface SegmentState {
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
   * in liveBySession, whether memory, the journal-only list or neither holds it.
   */
  sessions: Map<number, string>;
}

/**
 * What the journal holds, in memory: per segment which of its records are still owed (a
 * segment that owes none can go), per session how many, and the session's records that only
 * the disk holds, in acceptance order, for the drain to read back.
 */
export class JournalLedger {
  protected readonly segments = new Map<string, SegmentState>();
  private readonly liveBySession = new Map<string, number>();
  protected readonly journalOnly = new JournalOnlyList();
  // Records of segments that vanished: where each is now (see JournalIndex).
  protected readonly moves = new JournalMoves();

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
  addJournalOnly(entries: readonly DiskEntry[]): DiskEntry[] {
    const listed: DiskEntry[] = [];
    for (const given of entries) {
      const location = this.moves.current(given.location);
      const entry = location === given.location ? given : { ...given, location };
      const orphan = this.moves.orphanAt(entry.location);
      if (orphan) {
        // On no disk right now: it becomes journal-only once journaled again.
        orphan.released = true;
        continue;
      }
      this.segments.get(entry.location.segment)?.held.delete(entry.location.offset);
      listed.push(entry);
    }
    return this.journalOnly.add(listed);
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
      this.journalOnly.remove(record);
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

  /** Up to `limit` of the session's journal-only entries, oldest first. */
  journalOnlyOf(sessionId: string, limit: number): DiskEntry[] {
    return this.journalOnly.of(sessionId, limit);
  }

  /** The session's journal-only entry of this id, if it has one. */
  findJournalOnly(sessionId: string, id: string): DiskEntry | undefined {
    return this.journalOnly.find(sessionId, id);
  }

  hasJournalOnly(sessionId: string): boolean {
    return this.journalOnly.has(sessionId);
  }

  sessionsWithJournalOnly(): string[] {
    return this.journalOnly.sessionIds();
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

  protected countLive(sessionId: string, change: number): void {
    const live = (this.liveBySession.get(sessionId) ?? 0) + change;
    if (live > 0) this.liveBySession.set(sessionId, live);
    else this.liveBySession.delete(sessionId);
  }

  private segmentOf(name: string): SegmentState {
    this.addSegment(name, false);
    return this.segments.get(name) as SegmentState;
  }
}
