import { crc32 } from 'node:zlib';
import { SESSION_ID_PATTERN } from '../common/validation/session-id.js';
import {
  changesCarried,
  type MessageChanges,
  type MessageRecord,
} from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { parseOrderKey } from '../message/order-key.js';
import { describeError } from '../common/errors/describe-error.js';

/**
 * One journal record is one line of JSON, readable with `cat` and `jq`:
 *
 *   {"crc":"1c291ca3","v":1,"message":{"id":"…","sessionId":"…",…}}
 *
 * `crc` is the CRC-32 (hex) of the bytes that follow the 18-byte `{"crc":"xxxxxxxx",` prefix up
 * to the end of the line, so a torn or flipped line is told from a good one without trusting
 * its JSON. `v` is the format version; a reader refuses versions it does not know.
 */
export const JOURNAL_FORMAT_VERSION = 1;

const PREFIX_BYTES = 18;
const PREFIX = /^\{"crc":"([0-9a-f]{8})",/;
const ROLES: readonly string[] = Object.values(MessageRole);

/**
 * A redacted message's line, overwritten in place by a scrub (see encodeScrubbedLine):
 * nothing is owed for it, and it holds nothing to keep. `id` is null when the scrub was torn
 * before the id was whole.
 */
export interface ScrubbedLine {
  kind: 'scrubbed';
  id: string | null;
}

export type DecodedLine =
  { kind: 'record'; record: MessageRecord } | { kind: 'bad'; reason: string } | ScrubbedLine;

// What follows the prefix of a scrubbed line; what follows it in a record's line names its id.
const SCRUBBED_HEAD = `"v":${JOURNAL_FORMAT_VERSION},"scrubbed":`;
const NAMED_ID = /^"v":1,"(?:message":\{"id"|scrubbed"):("(?:[^"\\]|\\.)*")/;
// Where a line names its id: ids are short, and a scan must not decode a whole long line.
const ID_HEAD_BYTES = 1024;
const NEWLINE = Buffer.from('\n', 'latin1');

/** The line (newline included) that journals `record`. */
export function encodeJournalLine(record: MessageRecord): Buffer {
  const body = Buffer.from(
    `"v":${JOURNAL_FORMAT_VERSION},"message":${JSON.stringify({
      id: record.id,
      sessionId: record.sessionId,
      orderKey: record.orderKey,
      role: record.role,
      content: record.content,
      clientMessageId: record.clientMessageId,
      toolName: record.toolName,
      toolCallId: record.toolCallId,
      toolCalls: record.toolCalls ?? null,
      metadata: record.metadata ?? null,
      acceptedAt: record.acceptedAt,
      // Only an imported message has one: the lines of every other stay as they were.
      ...(record.createdAt !== null && record.createdAt !== undefined
        ? { createdAt: record.createdAt }
        : {}),
      // And only an imported message edited or redacted where it came from has these.
      ...changesCarried(record),
    })}}\n`,
    'utf8',
  );
  const prefix = Buffer.from(`{"crc":"${checksum(body.subarray(0, body.length - 1))}",`, 'utf8');
  return Buffer.concat([prefix, body]);
}

/**
 * The line (newline included) that takes the place of a redacted message's line of `length`
 * bytes, newline included: the same length, so that every other line keeps its offset.
 *
 *   {"crc":"8f3a…","v":1,"scrubbed":"<id>"}            (spaces up to the newline)
 *
 * It names the id only, and has a checksum of its own (spaces included). Null when `length`
 * is too short to hold it, which no line of that id is.
 */
export function encodeScrubbedLine(id: string, length: number): Buffer | null {
  const head = `${SCRUBBED_HEAD}${JSON.stringify(id)}}`;
  const padding = length - 1 - PREFIX_BYTES - Buffer.byteLength(head, 'utf8');
  if (padding < 0) return null;
  const body = Buffer.from(`${head}${' '.repeat(padding)}`, 'utf8');
  return Buffer.concat([Buffer.from(`{"crc":"${checksum(body)}",`, 'utf8'), body, NEWLINE]);
}

/**
 * The id a line names where a journal line names it (its message's id, or a scrubbed line's),
 * whatever the rest of the line holds: a torn or flipped line of a message is told by it too.
 * Null when the line names none there.
 */
export function journaledIdOf(line: Buffer): string | null {
  if (!PREFIX.test(line.subarray(0, PREFIX_BYTES).toString('latin1'))) return null;
  const head = line.subarray(PREFIX_BYTES, PREFIX_BYTES + ID_HEAD_BYTES).toString('utf8');
  const match = NAMED_ID.exec(head);
  if (!match) return null;
  try {
    const id = JSON.parse(match[1]) as unknown;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/**
 * Whether `bytes` begin as a scrubbed line does, checksum or not: a scrub torn by a crash
 * (the rest of the line may still be the redacted message's) is read as scrubbed, never as a
 * bad line whose bytes would be copied to the set-aside log.
 */
export function isScrubbedHead(bytes: Buffer): boolean {
  return (
    PREFIX.test(bytes.subarray(0, PREFIX_BYTES).toString('latin1')) &&
    bytes
      .subarray(PREFIX_BYTES, PREFIX_BYTES + SCRUBBED_HEAD.length)
      .equals(Buffer.from(SCRUBBED_HEAD, 'latin1'))
  );
}

/** A line without its newline: the record it holds, or why it cannot be used. */
export function decodeJournalLine(line: Buffer): DecodedLine {
  const match = PREFIX.exec(line.subarray(0, PREFIX_BYTES).toString('latin1'));
  if (!match) return { kind: 'bad', reason: 'not a journal record (no checksum prefix)' };
  if (crc32(line.subarray(PREFIX_BYTES)) !== Number.parseInt(match[1], 16)) {
    if (isScrubbedHead(line)) return { kind: 'scrubbed', id: journaledIdOf(line) };
    return { kind: 'bad', reason: 'checksum mismatch (torn or corrupted line)' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(line.toString('utf8'));
  } catch {
    return { kind: 'bad', reason: 'checksum matches but the line is not JSON' };
  }
  const fields = parsed as { v?: unknown; message?: unknown; scrubbed?: unknown };
  if (fields.v !== JOURNAL_FORMAT_VERSION) {
    return { kind: 'bad', reason: `unknown format version ${JSON.stringify(fields.v)}` };
  }
  if (fields.message === undefined && typeof fields.scrubbed === 'string') {
    return { kind: 'scrubbed', id: fields.scrubbed };
  }
  try {
    return { kind: 'record', record: parseJournalMessage(fields.message) };
  } catch (error) {
    return { kind: 'bad', reason: `bad message: ${describeError(error)}` };
  }
}

function checksum(bytes: Buffer): string {
  return crc32(bytes).toString(16).padStart(8, '0');
}

/** A message as the journal writes it, checked field by field; throws with the first problem. */
export function parseJournalMessage(value: unknown): MessageRecord {
  const message = requireObject(value);
  const sessionId = requireString(message, 'sessionId');
  if (!SESSION_ID_PATTERN.test(sessionId)) throw new Error('sessionId is not a session id');
  const orderKey = requireString(message, 'orderKey');
  if (!parseOrderKey(orderKey)) throw new Error('orderKey is not an order key');
  const role = requireString(message, 'role');
  if (!ROLES.includes(role)) throw new Error(`role is not one of ${ROLES.join(', ')}`);
  const acceptedAt = message.acceptedAt;
  if (!isTime(acceptedAt)) {
    throw new Error('acceptedAt is not a time');
  }
  const id = requireString(message, 'id');
  if (id.length === 0) throw new Error('id is empty');
  const createdAt = message.createdAt ?? null;
  if (createdAt !== null && !isTime(createdAt)) throw new Error('createdAt is not a time');
  return {
    id,
    sessionId,
    orderKey,
    role: role as MessageRole,
    content: requireString(message, 'content'),
    clientMessageId: requireNullableString(message, 'clientMessageId'),
    toolName: requireNullableString(message, 'toolName'),
    toolCallId: requireNullableString(message, 'toolCallId'),
    toolCalls: message.toolCalls ?? null,
    metadata: message.metadata ?? null,
    acceptedAt,
    ...(createdAt !== null ? { createdAt } : {}),
    ...changesOf(message),
  };
}

/** What an imported message's line says of its edits and redaction (see encodeJournalLine). */
function changesOf(message: Record<string, unknown>): Partial<MessageChanges> {
  if (message.revision === undefined) return {};
  const revision = message.revision;
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) {
    throw new Error('revision is not a revision');
  }
  const times = ['editedAt', 'redactedAt'].map((key) => message[key] ?? null);
  if (times.some((time) => time !== null && !isTime(time))) throw new Error('not a change time');
  const [editedAt, redactedAt] = times as (number | null)[];
  return {
    revision,
    editedAt,
    redactedAt,
    redactionReason: requireNullableString(message, 'redactionReason'),
  };
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function requireObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('message is not an object');
  }
  return value as Record<string, unknown>;
}

function requireString(object: Record<string, unknown>, key: string): string {
  const value = object[key];
  if (typeof value !== 'string') throw new Error(`${key} is not a string`);
  return value;
}

function requireNullableString(object: Record<string, unknown>, key: string): string | null {
  const value = object[key];
  if (value === null) return null;
  if (typeof value !== 'string') throw new Error(`${key} is not a string or null`);
  return value;
}
