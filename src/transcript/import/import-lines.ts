import { ScribeException } from '../../common/errors/scribe.exception.js';
import { jsonBodyProblem } from '../../common/validation/json-body.js';
import { boundedTextProblem, jsonProblem } from '../../common/validation/storable-values.js';
import { type ExportedSessionFields } from '../../database/session-updates.js';
import { AppendStatus } from '../../message/append-status.js';
import { MessageRole } from '../../message/message-role.js';
import { type ImportedMessage } from '../transcript-importer.js';
import { CHANGE_KEYS, changesOf } from './import-changes.js';
import { count, nullableText, text, timeOf } from './import-fields.js';

/** One line of an import: the session's own fields (the first line), or a message. */
export type ImportLine =
  | { kind: 'session'; session: ExportedSessionFields }
  | { kind: 'message'; message: ImportedMessage };

// What an export writes of each (transcript-formats.ts, jsonl): every field a read gives.
const SESSION_KEYS = [
  'id',
  'title',
  'metadata',
  'createdAt',
  'updatedAt',
  'messageCount',
  'revision',
];
const MESSAGE_KEYS = [
  'id',
  'sessionId',
  'status',
  'role',
  'content',
  'clientMessageId',
  'toolName',
  'toolCallId',
  'toolCalls',
  'metadata',
  'createdAt',
  ...CHANGE_KEYS,
];
const REQUIRED_MESSAGE_KEYS = ['id', 'role', 'content', 'createdAt'];
const ROLES: readonly string[] = Object.values(MessageRole);
const STATUSES: readonly string[] = Object.values(AppendStatus);
// A session's title: the width of its column, in characters (as updateSession bounds it).
const MAX_TITLE_CHARACTERS = 512;
/**
 * The greatest revision an import restores: GraphQL's Int is 32 bits, and every later write
 * adds one. A file's revision past it (a forged one) would break every read of the session,
 * and past 2^53 every write of the instance.
 */
export const MAX_IMPORTED_REVISION = 1_000_000_000;
// How far ahead of this clock a session's own times may be: a forged updatedAt of the year
// 9999 would hold the session at the top of every list.
const SESSION_TIME_AHEAD_MS = 60_000;

/**
 * A line of an import (its text, without its newline), checked as appendMessages and
 * updateSession check theirs: BAD_USER_INPUT naming the line and field for anything an export
 * would not have written, or Scribe could not store faithfully. The first line (`first`) is
 * the session's own fields, `{"session":{…}}` with the id the import is for; each other is one message,
 * `{"message":{…}}`. Keys an export does not write are refused, not ignored: a misspelt
 * `clientMesageId` would otherwise import a message without its client id.
 */
export function parseImportLine(
  text: string,
  line: number,
  sessionId: string,
  maxMessageBytes: number,
  first: boolean,
): ImportLine {
  const at = `line ${line}`;
  const bytes = Buffer.from(text, 'utf8');
  // Bounded before it is parsed, as a GraphQL body is: no depth or key count Scribe takes.
  const shape = jsonBodyProblem(bytes, Number.POSITIVE_INFINITY);
  if (shape) throw ScribeException.invalidInput(at, shape.message);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw ScribeException.invalidInput(at, 'is not JSON');
  }
  const wrapper = objectAt(parsed, at);
  const keys = Object.keys(wrapper);
  const kind = first ? 'session' : 'message';
  if (keys.length !== 1 || keys[0] !== kind) {
    throw ScribeException.invalidInput(
      at,
      first
        ? 'must be {"session":{…}}, the session as its export wrote it'
        : 'must be {"message":{…}}, one message as its export wrote it',
    );
  }
  const body = objectAt(wrapper[kind], `${at}.${kind}`);
  return kind === 'session'
    ? { kind, session: sessionOf(body, `${at}.session`, sessionId, maxMessageBytes) }
    : { kind, message: messageOf(body, `${at}.message`, sessionId) };
}

function sessionOf(
  body: Record<string, unknown>,
  at: string,
  sessionId: string,
  maxMessageBytes: number,
): ExportedSessionFields {
  onlyKeys(body, SESSION_KEYS, at);
  if (body.id !== sessionId) {
    throw ScribeException.invalidInput(
      `${at}.id`,
      `must be the session imported into (${JSON.stringify(sessionId)}): an export imports into the session it came from`,
    );
  }
  const title = nullableText(body, 'title', at);
  const titleProblem = title === null ? undefined : boundedTextProblem(title, MAX_TITLE_CHARACTERS);
  if (titleProblem) throw ScribeException.invalidInput(`${at}.title`, titleProblem);
  const metadata = body.metadata ?? null;
  const problem = jsonProblem(metadata);
  if (problem) throw ScribeException.invalidInput(`${at}.metadata`, problem);
  const metadataBytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (metadataBytes > maxMessageBytes) {
    throw ScribeException.invalidInput(
      `${at}.metadata`,
      `is ${metadataBytes} bytes; the limit is ${maxMessageBytes} bytes (MAX_MESSAGE_BYTES)`,
    );
  }
  count(body, 'messageCount', at);
  const revision = count(body, 'revision', at);
  if (revision > MAX_IMPORTED_REVISION) {
    throw ScribeException.invalidInput(
      `${at}.revision`,
      `must be at most ${MAX_IMPORTED_REVISION}`,
    );
  }
  const latest = Date.now() + SESSION_TIME_AHEAD_MS;
  const createdAt = timeOf(body, 'createdAt', at);
  const updatedAt = timeOf(body, 'updatedAt', at);
  for (const [key, time] of [
    ['createdAt', createdAt],
    ['updatedAt', updatedAt],
  ] as const) {
    if (time > latest) throw ScribeException.invalidInput(`${at}.${key}`, 'is in the future');
  }
  if (updatedAt < createdAt) {
    throw ScribeException.invalidInput(`${at}.updatedAt`, 'is before createdAt');
  }
  return { title, metadata, createdAt, updatedAt, revision };
}

function messageOf(body: Record<string, unknown>, at: string, sessionId: string): ImportedMessage {
  onlyKeys(body, MESSAGE_KEYS, at);
  const missing = REQUIRED_MESSAGE_KEYS.find((key) => !Object.hasOwn(body, key));
  if (missing) throw ScribeException.invalidInput(`${at}.${missing}`, 'is required');
  if (body.sessionId !== undefined && body.sessionId !== sessionId) {
    throw ScribeException.invalidInput(
      `${at}.sessionId`,
      `must be the session imported into (${JSON.stringify(sessionId)}), or absent`,
    );
  }
  // A status is what the export's reader was told; an import gives each message its own.
  if (body.status !== undefined && !STATUSES.includes(body.status as string)) {
    throw ScribeException.invalidInput(`${at}.status`, `must be one of ${STATUSES.join(', ')}`);
  }
  if (!ROLES.includes(body.role as string)) {
    throw ScribeException.invalidInput(`${at}.role`, `must be one of ${ROLES.join(', ')}`);
  }
  const id = text(body, 'id', at);
  const content = text(body, 'content', at);
  const createdAt = timeOf(body, 'createdAt', at);
  return {
    id,
    role: body.role as MessageRole,
    content,
    clientMessageId: nullableText(body, 'clientMessageId', at),
    toolName: nullableText(body, 'toolName', at),
    toolCallId: nullableText(body, 'toolCallId', at),
    toolCalls: body.toolCalls ?? null,
    metadata: body.metadata ?? null,
    createdAt,
    ...changesOf(body, at, createdAt),
  };
}

function objectAt(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw ScribeException.invalidInput(at, 'must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function onlyKeys(body: Record<string, unknown>, allowed: readonly string[], at: string): void {
  const stray = Object.keys(body).find((key) => !allowed.includes(key));
  if (stray !== undefined) {
    throw ScribeException.invalidInput(`${at}.${stray}`, `property ${stray} should not exist`);
  }
}
