import { SessionEntity } from './entities/session.entity.js';
import { Session } from './models/session.model.js';
import { type SessionRecord } from './session-record.js';

export function sessionRecordFromEntity(entity: SessionEntity): SessionRecord {
  return {
    id: entity.id,
    title: entity.title,
    createdAt: entity.createdAt,
    updatedAt: entity.updatedAt,
    messageCount: entity.messageCount,
    revision: entity.revision,
  };
}

export function toSessionModel(record: SessionRecord): Session {
  return {
    id: record.id,
    title: record.title,
    createdAt: new Date(record.createdAt),
    updatedAt: new Date(record.updatedAt),
    messageCount: record.messageCount,
    revision: record.revision,
  };
}

/** Cursor key of the session list (most recently updated first). */
export function sessionListKey(record: SessionRecord): string {
  return `${record.updatedAt}:${record.id}`;
}

export function parseSessionListKey(key: string): { updatedAt: number; id: string } | null {
  const match = /^(\d{1,16}):(.+)$/.exec(key);
  return match ? { updatedAt: Number(match[1]), id: match[2] } : null;
}
