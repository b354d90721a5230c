import { type SessionRecord } from '../../message/session-record.js';
import { Session } from './models/session.model.js';

/** The one mapping of a stored session to the API's Session, wherever one is answered. */
export function toSessionModel(record: SessionRecord): Session {
  return {
    id: record.id,
    title: record.title,
    metadata: record.metadata,
    createdAt: new Date(record.createdAt),
    updatedAt: new Date(record.updatedAt),
    messageCount: record.messageCount,
    revision: record.revision,
  };
}
