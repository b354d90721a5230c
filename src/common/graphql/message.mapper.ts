import { type MessageRecord } from '../../message/message-record.js';
import { Message } from './models/message.model.js';

export function toMessageModel(record: MessageRecord): Message {
  return {
    id: record.id,
    sessionId: record.sessionId,
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
