import { MessageEntity } from './entities/message.entity.js';
import { type MessageRecord } from './message-record.js';
import { MessageRole } from './models/message-role.enum.js';
import { Message } from './models/message.model.js';

export function messageRecordFromEntity(entity: MessageEntity): MessageRecord {
  return {
    id: entity.id,
    sessionId: entity.sessionId,
    orderKey: entity.orderKey,
    role: entity.role as MessageRole,
    content: entity.content,
    clientMessageId: entity.clientMessageId,
    toolName: entity.toolName,
    toolCallId: entity.toolCallId,
    toolCalls: entity.toolCalls ?? null,
    metadata: entity.metadata ?? null,
    acceptedAt: entity.acceptedAt,
  };
}

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
