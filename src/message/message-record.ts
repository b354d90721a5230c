import { MessageRole } from './message-role.js';

/** A message as the domain knows it: assigned its id and place when its append was accepted. */
export interface MessageRecord {
  id: string;
  sessionId: string;
  orderKey: string;
  role: MessageRole;
  content: string;
  clientMessageId: string | null;
  toolName: string | null;
  toolCallId: string | null;
  toolCalls: unknown;
  metadata: unknown;
  /** Epoch milliseconds at which the append was accepted. */
  acceptedAt: number;
  /**
   * Epoch milliseconds at which an imported message was written where it came from: the time
   * a read gives it. Absent (or null) for a message accepted here, whose time is acceptedAt.
   * Never this instance's clock: acceptedAt orders, floors and stamps, this only informs.
   */
  createdAt?: number | null;
  /**
   * Its place in the session's commit order, once stored: read from the database, or set on
   * the accepted record when its write commits. Absent while it is pending.
   */
  commitSeq?: number | null;
}

/** What a client sends for one message. */
export interface NewMessage {
  role: MessageRole;
  content: string;
  clientMessageId?: string | null;
  toolName?: string | null;
  toolCallId?: string | null;
  toolCalls?: unknown;
  metadata?: unknown;
}
