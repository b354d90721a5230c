import { crc32 } from 'node:zlib';
import { SESSION_ID_PATTERN } from '../common/validation/session-id.js';
import { type MessageRecord } from '../message/message-record.js';
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

export type DecodedLine =
  { kind: 'record'; record: MessageRecord } | { kind: 'bad'; reason: string };

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
    })}}\n`,
    'utf8',
  );
  const prefix = Buffer.from(`{"crc":"${checksum(body.subarray(0, body.length - 1))}",`, 'utf8');
  return Buffer.concat([prefix, body]);
}

/** A line without its newline: the record it holds, or why it cannot be used. */
export function decodeJournalLine(line: Buffer): DecodedLine {
  const match = PREFIX.exec(line.subarray(0, PREFIX_BYTES).toString('latin1'));
  if (!match) return { kind: 'bad', reason: 'not a journal record (no checksum prefix)' };
  if (crc32(line.subarray(PREFIX_BYTES)) !== Number.parseInt(match[1], 16)) {
    return { kind: 'bad', reason: 'checksum mismatch (torn or corrupted line)' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(line.toString('utf8'));
  } catch {
    return { kind: 'bad', reason: 'checksum matches but the line is not JSON' };
  }
  const fields = parsed as { v?: unknown; message?: unknown };
  if (fields.v !== JOURNAL_FORMAT_VERSION) {
    return { kind: 'bad', reason: `unknown format version ${JSON.stringify(fields.v)}` };
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
