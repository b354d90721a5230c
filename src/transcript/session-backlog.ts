import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '../common/concurrency/keyed-mutex.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { type HeldMessage } from '../message/held-messages.js';
import { type RecordLocation } from '../spool/journal-ledger.js';

/** An accepted message waiting for the database, and where the journal holds it. */
export interface BacklogEntry {
  record: MessageRecord;
  /** Its journal line; null while it is held in memory only (BUFFERED). */
  location: RecordLocation | null;
}

/** One session's backlog: its held messages in memory, oldest first; only usable while its lock is held. */
export interface Backlog {
  readonly sessionId: string;
  readonly size: number;
  push(entries: readonly BacklogEntry[]): void;
  /** Up to `limit` of the oldest, without removing them. */
  peek(limit: number): BacklogEntry[];
  /** Removes and returns the `count` oldest (stored, or evicted to the journal). */
  shift(count: number): BacklogEntry[];
  find(id: string): BacklogEntry | undefined;
  /** The entries of these ids, in one pass (an import asks for a thousand at once). */
  findAll(ids: ReadonlySet<string>): Map<string, BacklogEntry>;
  /** The entries held in memory only. */
  buffered(): BacklogEntry[];
  /** `entry` (held in memory only) is now journaled at `location`. */
  journaled(entry: BacklogEntry, location: RecordLocation): void;
}

/**
 * Accepted messages the database has not taken yet, per session, with the lock that orders
 * everything done to a session: its backlog can be read or changed only inside withSession(),
 * through the handle it passes, which stops working once the lock is let go.
 */
@Injectable()
export class SessionBacklog {
  private readonly locks = new KeyedMutex();
  private readonly backlogs = new Map<string, BacklogEntry[]>();
  private count = 0;
  private bufferedCount = 0;

  withSession<T>(sessionId: string, work: (backlog: Backlog) => Promise<T>): Promise<T> {
    return this.locks.runExclusive(sessionId, async () => {
      const backlog = this.backlogOf(sessionId);
      try {
        return await work(backlog);
      } finally {
        backlog.close();
      }
    });
  }

  /** Messages held in memory, all sessions. */
  get total(): number {
    return this.count;
  }

  /** Messages held in memory only (not journaled), all sessions. */
  get totalBuffered(): number {
    return this.bufferedCount;
  }

  /**
   * For readers, without the lock: a backlog's array is replaced on every change, never changed
   * in place, so what is read is one moment's backlog.
   */
  of(sessionId: string, onDisk: (location: RecordLocation) => boolean = () => true): HeldMessage[] {
    return (this.backlogs.get(sessionId) ?? []).map((entry) => ({
      record: entry.record,
      status:
        entry.location !== null && onDisk(entry.location)
          ? AppendStatus.QUEUED
          : AppendStatus.BUFFERED,
    }));
  }

  sessions(): string[] {
    return [...this.backlogs.keys()];
  }

  size(sessionId: string): number {
    return this.backlogs.get(sessionId)?.length ?? 0;
  }

  private backlogOf(sessionId: string): LockedBacklog {
    return new LockedBacklog(sessionId, {
      entries: () => this.backlogs.get(sessionId) ?? [],
      store: (entries) => {
        if (entries.length > 0) this.backlogs.set(sessionId, entries);
        else this.backlogs.delete(sessionId);
      },
      counted: (entries, buffered) => {
        this.count += entries;
        this.bufferedCount += buffered;
      },
    });
  }
}

interface BacklogStorage {
  entries(): BacklogEntry[];
  store(entries: BacklogEntry[]): void;
  counted(entries: number, buffered: number): void;
}

class LockedBacklog implements Backlog {
  private open = true;

  constructor(
    readonly sessionId: string,
    private readonly storage: BacklogStorage,
  ) {}

  get size(): number {
    return this.entries().length;
  }

  push(entries: readonly BacklogEntry[]): void {
    if (entries.length === 0) return;
    this.storage.store([...this.entries(), ...entries]);
    this.storage.counted(entries.length, countBuffered(entries));
  }

  peek(limit: number): BacklogEntry[] {
    return this.entries().slice(0, limit);
  }

  shift(count: number): BacklogEntry[] {
    const entries = this.entries();
    const removed = entries.slice(0, count);
    this.storage.store(entries.slice(count));
    this.storage.counted(-removed.length, -countBuffered(removed));
    return removed;
  }

  find(id: string): BacklogEntry | undefined {
    return this.entries().find((entry) => entry.record.id === id);
  }

  findAll(ids: ReadonlySet<string>): Map<string, BacklogEntry> {
    const found = new Map<string, BacklogEntry>();
    for (const entry of this.entries()) {
      if (ids.has(entry.record.id)) found.set(entry.record.id, entry);
    }
    return found;
  }

  buffered(): BacklogEntry[] {
    return this.entries().filter((entry) => entry.location === null);
  }

  journaled(entry: BacklogEntry, location: RecordLocation): void {
    if (entry.location !== null || !this.entries().includes(entry)) return;
    entry.location = location;
    this.storage.counted(0, -1);
  }

  close(): void {
    this.open = false;
  }

  private entries(): BacklogEntry[] {
    if (!this.open) throw new Error(`the lock of session ${this.sessionId} is no longer held`);
    return this.storage.entries();
  }
}

function countBuffered(entries: readonly BacklogEntry[]): number {
  return entries.filter((entry) => entry.location === null).length;
}
