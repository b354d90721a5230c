import { type MessageRecord } from '../message/message-record.js';

/**
 * Accepted messages that the database has not taken yet, per session, oldest first.
 * The one seam behind which queued messages live: a journaled implementation (so that they
 * survive `kill -9`) can replace this one without touching the service.
 */
export interface PendingQueue {
  push(sessionId: string, records: MessageRecord[]): void;
  /** Up to `limit` of the oldest messages of a session, without removing them. */
  peek(sessionId: string, limit: number): MessageRecord[];
  /** Removes the `count` oldest messages of a session (after they were stored or spooled). */
  shift(sessionId: string, count: number): MessageRecord[];
  size(sessionId: string): number;
  findByClientMessageId(sessionId: string, clientMessageId: string): MessageRecord | undefined;
  sessions(): string[];
  readonly total: number;
}

export class InMemoryPendingQueue implements PendingQueue {
  private readonly queues = new Map<string, MessageRecord[]>();
  private count = 0;

  push(sessionId: string, records: MessageRecord[]): void {
    if (records.length === 0) return;
    const queue = this.queues.get(sessionId);
    if (queue) queue.push(...records);
    else this.queues.set(sessionId, [...records]);
    this.count += records.length;
  }

  peek(sessionId: string, limit: number): MessageRecord[] {
    return (this.queues.get(sessionId) ?? []).slice(0, limit);
  }

  shift(sessionId: string, count: number): MessageRecord[] {
    const queue = this.queues.get(sessionId);
    if (!queue) return [];
    const removed = queue.splice(0, count);
    if (queue.length === 0) this.queues.delete(sessionId);
    this.count -= removed.length;
    return removed;
  }

  size(sessionId: string): number {
    return this.queues.get(sessionId)?.length ?? 0;
  }

  findByClientMessageId(sessionId: string, clientMessageId: string): MessageRecord | undefined {
    return this.queues.get(sessionId)?.find((record) => record.clientMessageId === clientMessageId);
  }

  sessions(): string[] {
    return [...this.queues.keys()];
  }

  get total(): number {
    return this.count;
  }
}
