import { type MessageRecord } from './message-record.js';

/** A session's metadata as the domain knows it. Times are epoch milliseconds. */
export interface SessionRecord {
  id: string;
  title: string | null;
  /** Free-form client metadata (updateSession), null until set. */
  metadata: unknown;
  createdAt: number;
  updatedAt: number;
  messageCount: number;
  /**
   * Grows by one for every stored message of the session and every update of its title or
   * metadata, whichever instance made it.
   */
  revision: number;
}

/** A session with its whole transcript, in accepted order: what a full load produces. */
export interface FullSession {
  session: SessionRecord;
  /** The transcript; empty when the load stopped short (`complete` false). */
  messages: MessageRecord[];
  /** Estimated heap bytes of `messages` (see recordBytes). */
  bytes: number;
  /** False when the transcript was larger than the load's byte budget: read it page by page. */
  complete: boolean;
}

// A record's fixed cost on the heap (the object, its numbers, short strings' headers).
export const RECORD_OVERHEAD_BYTES = 200;

/**
 * About how many heap bytes a loaded record holds: two per UTF-16 unit of its strings, its JSON
 * fields as the text they were stored as, and a fixed overhead. For budgets, not accounting.
 */
export function recordBytes(record: MessageRecord): number {
  let units =
    record.id.length +
    record.sessionId.length +
    record.orderKey.length +
    record.content.length +
    (record.clientMessageId?.length ?? 0) +
    (record.toolName?.length ?? 0) +
    (record.toolCallId?.length ?? 0);
  if (record.toolCalls !== null && record.toolCalls !== undefined) {
    units += JSON.stringify(record.toolCalls).length;
  }
  if (record.metadata !== null && record.metadata !== undefined) {
    units += JSON.stringify(record.metadata).length;
  }
  return RECORD_OVERHEAD_BYTES + 2 * units;
}

/** About how many bytes a session's title and metadata take, counted as recordBytes counts. */
export function sessionBytes(session: SessionRecord): number {
  let units = session.id.length + (session.title?.length ?? 0);
  if (session.metadata !== null && session.metadata !== undefined) {
    units += JSON.stringify(session.metadata).length;
  }
  return RECORD_OVERHEAD_BYTES + 2 * units;
}
