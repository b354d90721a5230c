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
  /**
   * The message's own revision: 1 as appended, one more for each edit or redaction. Absent
   * (read as 1) on a record that was never changed, as every held record is.
   */
  revision?: number;
  /** Epoch milliseconds of its last edit; absent or null when it was never edited. */
  editedAt?: number | null;
  /**
   * Epoch milliseconds at which its content and metadata were removed for good (redactMessage),
   * leaving a tombstone; absent or null while it has them.
   */
  redactedAt?: number | null;
  /** Why it was redacted, as the redaction said. */
  redactionReason?: string | null;
  /**
   * The commit number of its last edit or redaction, taken from the session's commit order as
   * a stored message's is: what a live reader resumes after. Absent while it was never changed.
   */
  changeSeq?: number | null;
}

/** What edits and a redaction left of a message (see MessageRecord.revision). */
export type MessageChanges = Pick<
  MessageRecord,
  'revision' | 'editedAt' | 'redactedAt' | 'redactionReason'
>;

/**
 * The changes `from` carries, each field present, when it has a revision: a message changed
 * where it came from (an import, its journal line); nothing for one never changed.
 */
export function changesCarried(from: Partial<MessageChanges>): Partial<MessageChanges> {
  if (from.revision === undefined) return {};
  return {
    revision: from.revision,
    editedAt: from.editedAt ?? null,
    redactedAt: from.redactedAt ?? null,
    redactionReason: from.redactionReason ?? null,
  };
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
