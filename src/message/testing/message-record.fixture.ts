import { randomUUID } from 'node:crypto';
import { type MessageRecord } from '../message-record.js';
import { MessageRole } from '../message-role.js';
import { OrderKeyGenerator } from '../order-key.js';

const keys = new OrderKeyGenerator('f1x7e5a1');

/** A message as if accepted now: a fresh id and the next order key. */
export function acceptedRecord(
  sessionId: string,
  content: string,
  overrides: Partial<MessageRecord> = {},
): MessageRecord {
  const { key, ms } = keys.next();
  return {
    id: randomUUID(),
    sessionId,
    orderKey: key,
    role: MessageRole.USER,
    content,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    acceptedAt: ms,
    ...overrides,
  };
}
