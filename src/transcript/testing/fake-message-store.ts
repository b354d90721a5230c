import { describeError } from '../../common/errors/describe-error.js';
import { deferred, type Deferred } from '../../common/testing/deferred.js';
import { type DatabaseFailureKind } from '../../database/database-errors.js';
import {
  MessageStore,
  type SessionWrite,
  type WrittenSession,
} from '../../database/message-store.js';
import { type MessageRecord } from '../../message/message-record.js';
import { CoalescingWriter } from '../coalescing-writer.js';

/** What the fake database throws for rows it refuses (a constraint, a bad value). */
export class Refusal extends Error {}

export function classifyFakeError(error: unknown): DatabaseFailureKind {
  return error instanceof Refusal ? 'refused' : 'unavailable';
}

/** The real group-commit writer over `store`. */
export function writerOver(store: MessageStore): CoalescingWriter {
  return new CoalescingWriter(store, classifyFakeError, describeError);
}

/**
 * A database for the write path's specs. It commits what it is given unless told otherwise:
 * `goDown()` fails every write and heartbeat as an outage until `heal()`; a transaction that
 * holds a record whose id is in `failingIds` fails as an outage too, and one that holds a
 * record whose id is in `refusingIds` is refused. Like the real stores it skips a record
 * stored already (same id, or same client id in the session). Calls can be held.
 */
export class FakeMessageStore extends MessageStore {
  /** Committed records, in commit order. */
  readonly rows: MessageRecord[] = [];
  /** The record ids of each write call, in call order. */
  readonly writeCalls: string[][] = [];
  heartbeats = 0;
  readonly failingIds = new Set<string>();
  readonly refusingIds = new Set<string>();
  private outage: Error | null = null;
  private diskFull: Error | null = null;
  private readonly revisions = new Map<string, number>();
  private readonly holds: Deferred[] = [];
  private waiters: { count: number; gate: Deferred }[] = [];

  goDown(message = 'connection refused', code?: string): Error {
    this.outage = Object.assign(new Error(message), code === undefined ? {} : { code });
    return this.outage;
  }

  /**
   * A full disk with a page or two free: writes fail with SQLITE_FULL, heartbeats still commit,
   * until `heal()`.
   */
  fillDisk(): Error {
    this.diskFull = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    return this.diskFull;
  }

  heal(): void {
    this.outage = null;
    this.diskFull = null;
  }

  /** The next call (write or heartbeat) waits until the gate is resolved. */
  holdNextCall(): Deferred {
    const gate = deferred();
    this.holds.push(gate);
    return gate;
  }

  /** Resolves once `count` calls (writes and heartbeats) have arrived: a barrier, not a sleep. */
  callsReceived(count: number): Promise<void> {
    const gate = deferred();
    this.waiters.push({ count, gate });
    this.wake();
    return gate.promise;
  }

  /** Stores `record` as if another instance (or an earlier run) had committed it. */
  storedElsewhere(record: MessageRecord): void {
    this.rows.push(record);
  }

  /** The contents of the committed records, of one session or all, in commit order. */
  contents(sessionId?: string): string[] {
    return this.rows
      .filter((row) => sessionId === undefined || row.sessionId === sessionId)
      .map((row) => row.content);
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    const records = writes.flatMap((one) => one.records);
    this.writeCalls.push(records.map((record) => record.id));
    await this.turn();
    if (this.outage) throw this.outage;
    if (this.diskFull) throw this.diskFull;
    const failing = records.find((record) => this.failingIds.has(record.id));
    if (failing) throw new Error(`still broken for ${failing.content}`);
    const refused = records.find((record) => this.refusingIds.has(record.id));
    if (refused) throw new Refusal(`refused ${refused.content}`);
    return writes.map((one) => {
      const inserted: MessageRecord[] = [];
      const skipped: MessageRecord[] = [];
      for (const record of one.records) {
        if (this.isStored(record)) {
          skipped.push(record);
        } else {
          inserted.push(record);
          this.rows.push(record);
        }
      }
      const revision = (this.revisions.get(one.sessionId) ?? 0) + inserted.length;
      this.revisions.set(one.sessionId, revision);
      return { inserted, skipped, revision: inserted.length > 0 ? revision : null };
    });
  }

  async heartbeat(): Promise<void> {
    this.heartbeats += 1;
    await this.turn();
    if (this.outage) throw this.outage;
  }

  private get callCount(): number {
    return this.writeCalls.length + this.heartbeats;
  }

  private isStored(record: MessageRecord): boolean {
    return this.rows.some(
      (row) =>
        row.id === record.id ||
        (record.clientMessageId !== null &&
          row.sessionId === record.sessionId &&
          row.clientMessageId === record.clientMessageId),
    );
  }

  private async turn(): Promise<void> {
    this.wake();
    const hold = this.holds.shift();
    if (hold) await hold.promise;
  }

  private wake(): void {
    const ready = this.waiters.filter((waiter) => this.callCount >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.gate.resolve();
  }
}
