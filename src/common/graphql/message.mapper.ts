import { AppendStatus } from '../../message/append-status.js';
import { parseOrderKey } from '../../message/order-key.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { decodeCursor, encodeCursor } from '../pagination/cursor.js';
import { type MessageRecord } from '../../message/message-record.js';
import { Message } from './models/message.model.js';

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
    createdAt: new Date(record.acceptedAt),
  };
}

/** A message's cursor: its place in the session, as pages and `messageAppended` hand it out. */
export function messageCursor(record: MessageRecord): string {
  return encodeCursor(record.orderKey);
}

/** The order key a message cursor stands for; BAD_USER_INPUT (naming `argument`) for anything else. */
export function decodeMessageCursor(
  cursor: string,
  argument: 'after' | 'before' = 'after',
): string {
  const key = decodeCursor(cursor, argument);
  if (!parseOrderKey(key))
    throw ScribeException.invalidInput(argument, 'is not a cursor of this list');
  return key;
}
