import { type MessageRecord } from '../message/message-record.js';
import { type MessageRole } from '../message/message-role.js';
import { type SessionRecord } from '../message/session-record.js';
import { type MessageEntity } from './entities/message.entity.js';
import { type SessionEntity } from './entities/session.entity.js';

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
    // Only an imported message has one: a record of another reads as it was accepted.
    ...(entity.createdAt !== null ? { createdAt: entity.createdAt } : {}),
    commitSeq: entity.commitSeq,
    // Only a changed message says so: one never changed reads as its append gave it. (An
    // imported one may have been changed where it came from, with no commit number here.)
    ...(entity.revision !== null
      ? {
          revision: entity.revision,
          editedAt: entity.editedAt,
          redactedAt: entity.redactedAt,
          redactionReason: entity.redactionReason,
          changeSeq: entity.changeSeq,
        }
      : {}),
  };
}

export function sessionRecordFromEntity(entity: SessionEntity): SessionRecord {
  return {
    id: entity.id,
    title: entity.title,
    metadata: entity.metadata ?? null,
    createdAt: entity.createdAt,
    updatedAt: entity.updatedAt,
    messageCount: entity.messageCount,
    revision: entity.revision,
  };
}

/**
 * Rows read by id (`In(ids)`, in no order) put back in the order of `ids` and mapped; an id
 * with no row (deleted between the read that chose the ids and this one) is left out.
 */
export function inIdOrder<Row extends { id: string }, Mapped>(
  ids: readonly string[],
  rows: readonly Row[],
  map: (row: Row) => Mapped,
): Mapped[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [map(row)] : [];
  });
}
