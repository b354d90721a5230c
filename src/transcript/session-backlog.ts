import { Injectable } from '@nestjs/common';
import { KeyedMutex } from '../common/concurrency/keyed-mutex.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { type PendingMessage } from '../message/pending-messages.js';
import { type RecordLocation } from '../spool/spool.service.js';

/** An accepted message waiting for the database, and where the journal holds it. */
export interface PendingEntry {
  record: MessageRecord;
  /** Its journal line; null while it is held in memory only (BUFFERED). */
  location: RecordLocation | null;
}

/** One session's pending messages, oldest first; only usable while its lock is held. */
export interface PendingQueue {
  readonly sessionId: string;
  readonly size: number;
  push(entries: readonly PendingEntry[]): void;
  /** Up to `limit` of the oldest, without removing them. */
  peek(limit: number): PendingEntry[];
  /** Removes and returns the `count` oldest (stored, or evicted to the journal). */
  shift(count: number): PendingEntry[];
  find(id: string): PendingEntry | undefined;
  /** The entries of these ids, in one pass (an import asks for a thousand at once). */
  findAll(ids: ReadonlySet<string>): Map<string, PendingEntry>;
  /** The entries held in memory only. */
  buffered(): PendingEntry[];
  /** `entry` (held in memory only) is now journaled at `location`. */
  journaled(entry: PendingEntry, location: RecordLocation): void;
}

/**
 * Accepted messages the database has not taken yet, per session, with the lock that orders
 * everything done to a session: its queue can be read or changed only inside withSession(),
 * through the handle it passes, which stops working once the lock is let go.
 */
@Injectable()
export class SessionBacklog {
  private readonly locks = new KeyedMutex();
  private readonly queues = new Map<string, PendingEntry[]>();
  private count = 0;
  private bufferedCount = 0;

  withSession<T>(sessionId: string, work: (queue: PendingQueue) => Promise<T>): Promise<T> {
    return this.locks.runExclusive(sessionId, async () => {
      const queue = this.queueFor(sessionId);
      try {
        return await work(queue);
      } finally {
        queue.close();
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
   * For readers, without the lock: a queue's array is replaced on every change, never changed
   * in place, so what is read is one moment's queue.
   */
  of(
    sessionId: string,
    onDisk: (location: RecordLocation) => boolean = () => true,
  ): PendingMessage[] {
    return (this.queues.get(sessionId) ?? []).map((entry) => ({
      record: entry.record,
      status:
        entry.location !== null && onDisk(entry.location)
          ? AppendStatus.QUEUED
          : AppendStatus.BUFFERED,
    }));
  }

  sessions(): string[] {
    return [...this.queues.keys()];
  }

  size(sessionId: string): number {
    return this.queues.get(sessionId)?.length ?? 0;
  }

  private queueFor(sessionId: string): LockedQueue {
    return new LockedQueue(sessionId, {
      entries: () => this.queues.get(sessionId) ?? [],
      store: (entries) => {
        if (entries.length > 0) this.queues.set(sessionId, entries);
        else this.queues.delete(sessionId);
      },
      counted: (entries, buffered) => {
        this.count += entries;
        this.bufferedCount += buffered;
      },
    });
  }
}

interface QueueStorage {
  entries(): PendingEntry[];
  store(entries: PendingEntry[]): void;
  counted(entries: number, buffered: number): void;
}

class LockedQueue implements PendingQueue {
  private open = true;

  constructor(
    readonly sessionId: string,
    private readonly storage: QueueStorage,
  ) {}

  get size(): number {
    return this.entries().length;
  }

  push(entries: readonly PendingEntry[]): void {
    if (entries.length === 0) return;
    this.storage.store([...this.entries(), ...entries]);
    this.storage.counted(entries.length, countBuffered(entries));
  }

  peek(limit: number): PendingEntry[] {
    return this.entries().slice(0, limit);
  }

  shift(count: number): PendingEntry[] {
    const entries = this.entries();
    const removed = entries.slice(0, count);
    this.storage.store(entries.slice(count));
    this.storage.counted(-removed.length, -countBuffered(removed));
    return removed;
  }

  find(id: string): PendingEntry | undefined {
    return this.entries().find((entry) => entry.record.id === id);
  }

  findAll(ids: ReadonlySet<string>): Map<string, PendingEntry> {
    const found = new Map<string, PendingEntry>();
    for (const entry of this.entries()) {
      if (ids.has(entry.record.id)) found.set(entry.record.id, entry);
    }
    return found;
  }

  buffered(): PendingEntry[] {
    return this.entries().filter((entry) => entry.location === null);
  }

  journaled(entry: PendingEntry, location: RecordLocation): void {
    if (entry.location !== null || !this.entries().includes(entry)) return;
    entry.location = location;
    this.storage.counted(0, -1);
  }

  close(): void {
    this.open = false;
  }

  private entries(): PendingEntry[] {
    if (!this.open) throw new Error(`the lock of session ${this.sessionId} is no longer held`);
    return this.storage.entries();
  }
}

function countBuffered(entries: readonly PendingEntry[]): number {
  return entries.filter((entry) => entry.location === null).length;
}
