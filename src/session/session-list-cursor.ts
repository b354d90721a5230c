import { decodeCursor } from '../common/pagination/cursor.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { SESSION_ID_PATTERN } from '../common/validation/session-id.js';
import { type SessionListPosition } from '../database/session-list-queries.js';
import { type SessionRecord } from '../message/session-record.js';

// The session list's cursor, in one home: the key a page's cursors encode, and its parser. A
// cursor, not a mapping of the session: toSessionModel (common/graphql) is the one mapper.

/** Cursor key of the session list (most recently updated first). */
export function sessionListKey(record: SessionRecord): string {
  return `${record.updatedAt}:${record.id}`;
}

/** The place a session list cursor stands for; BAD_USER_INPUT for anything else. */
export function decodeSessionCursor(cursor: string): SessionListPosition {
  const match = /^(\d{1,16}):(.+)$/.exec(decodeCursor(cursor));
  // The id goes into a query: it must be a session id (no NUL, nothing PostgreSQL refuses).
  if (!match || !SESSION_ID_PATTERN.test(match[2]))
    throw ScribeException.invalidInput('after', 'is not a cursor of this list');
  return { updatedAt: Number(match[1]), id: match[2] };
}
