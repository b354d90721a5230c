import { AppendStatus } from '../../message/append-status.js';
import { parseOrderKey } from '../../message/order-key.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { decodeCursor, encodeCursor } from '../pagination/cursor.js';
import { type MessageRecord } from '../../message/message-record.js';
import { Message } from './models/message.model.js';
import { MessageEvent, MessageEventKind } from './models/message-event.model.js';
import { type TranscriptEvent } from '../../message/transcript-event.js';

export function toMessageModel(
  record: MessageRecord,
  status: AppendStatus = AppendStatus.PERSISTED,
): Message {
  return {
    id: record.id,
    sessionId: record.sessionId,
    status,
    role: record.role,
    content: record.content,
    clientMessageId: record.clientMessageId,
    toolName: record.toolName,
    toolCallId: record.toolCallId,
    toolCalls: record.toolCalls ?? null,
    metadata: record.metadata ?? null,
    createdAt: new Date(record.createdAt ?? record.acceptedAt),
    revision: record.revision ?? 1,
    editedAt: record.editedAt == null ? null : new Date(record.editedAt),
    redacted: record.redactedAt != null,
    redactedAt: record.redactedAt == null ? null : new Date(record.redactedAt),
    redactionReason: record.redactionReason ?? null,
  };
}

/** A `messageEvents` event: the message as the event left it, and where to resume after it. */
export function toMessageEvent(event: TranscriptEvent): MessageEvent {
  return {
    kind: EVENT_KINDS[event.kind],
    cursor: encodeCursor(
      event.seq === undefined ? event.record.orderKey : `${event.record.orderKey}#${event.seq}`,
    ),
    node: toMessageModel(event.record),
  };
}

const EVENT_KINDS: Record<TranscriptEvent['kind'], MessageEventKind> = {
  appended: MessageEventKind.APPENDED,
  edited: MessageEventKind.EDITED,
  redacted: MessageEventKind.REDACTED,
};

/** Where a message cursor points: a message's order key, and its commit number when known. */
export interface MessagePlace {
  key: string;
  seq?: number;
  /** The message was held, not stored, when a page listed it (see heldCursorKey). */
  held?: true;
}

// `<order key>` (a page's), `<order key>!` (a page's, of a message held then), or
// `<order key>#<commit number>` (a live event's).
const PLACE = /^([^#!]+)(?:#(\d{1,15})|(!))?$/;

/** The cursor key of a page's message this instance held (QUEUED, BUFFERED) when listed. */
export function heldCursorKey(orderKey: string): string {
  return `${orderKey}!`;
}

/**
 * A message's cursor: its order key, which pages sort by, and once it is stored its commit
 * number, which `messageAppended` resumes after exactly. Pages read the key and ignore the rest.
 */
export function messageCursor(record: MessageRecord): string {
  const seq = record.commitSeq;
  return encodeCursor(
    seq === null || seq === undefined ? record.orderKey : `${record.orderKey}#${seq}`,
  );
}

/** Where a message cursor points; BAD_USER_INPUT (naming `argument`) for anything else. */
export function decodeMessagePlace(
  cursor: string,
  argument: 'after' | 'before' = 'after',
): MessagePlace {
  const match = PLACE.exec(decodeCursor(cursor, argument));
  if (!match || !parseOrderKey(match[1])) {
    throw ScribeException.invalidInput(argument, 'is not a cursor of this list');
  }
  if (match[2] !== undefined) return { key: match[1], seq: Number(match[2]) };
  return match[3] === undefined ? { key: match[1] } : { key: match[1], held: true };
}

/** The order key a message cursor stands for; BAD_USER_INPUT (naming `argument`) for anything else. */
export function decodeMessageCursor(
  cursor: string,
  argument: 'after' | 'before' = 'after',
): string {
  return decodeMessagePlace(cursor, argument).key;
}
