import { jsonBytes, jsonProblem, textProblem } from '../common/validation/storable-values.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../common/validation/session-id.js';
import { type NewMessage } from '../message/message-record.js';

export const MAX_BATCH_MESSAGES = 1000;
// clientMessageId, toolName and toolCallId: the width of their columns, in characters.
const MAX_ID_CHARACTERS = 256;

// The text fields of a message. JSON fields (toolCalls, metadata) need no such check: they are
// stored as JSON text, whose escapes keep any string, NUL and lone surrogates included.
const TEXT_FIELDS = ['content', 'clientMessageId', 'toolName', 'toolCallId'] as const;
const ID_FIELDS = ['clientMessageId', 'toolName', 'toolCallId'] as const;
const JSON_FIELDS = ['toolCalls', 'metadata'] as const;

/**
 * The session and the size of a batch. These rules, and those of checkNewMessages, are all of
 * an append's input checks: plain code, one linear pass, run before anything else walks the
 * input (the global validation pipe does not: class-transformer is quadratic in the keys of
 * free-form JSON).
 */
export function checkAppendTarget(sessionId: string, messages: number, batchField: string): void {
  if (!SESSION_ID_PATTERN.test(sessionId)) {
    throw ScribeException.invalidInput('input.sessionId', `must be ${SESSION_ID_RULE}`);
  }
  if (messages < 1 || messages > MAX_BATCH_MESSAGES) {
    throw ScribeException.invalidInput(
      batchField,
      `must hold 1 to ${MAX_BATCH_MESSAGES} messages; it holds ${messages}`,
    );
  }
}

/**
 * Refuses what Scribe could not store faithfully, before anything is accepted: NUL (PostgreSQL
 * cannot store U+0000 in text) and lone UTF-16 surrogates (both drivers would store U+FFFD, so
 * two different client ids could collide, and the answer would echo what was not stored);
 * messages over `maxMessageBytes` of UTF-8 together; a client id repeated in one batch.
 * `fieldOf(i)` names input i in the error.
 */
export function checkNewMessages(
  inputs: readonly NewMessage[],
  maxMessageBytes: number,
  fieldOf: (index: number) => string,
): void {
  const seenClientIds = new Map<string, number>();
  inputs.forEach((input, index) => {
    for (const key of TEXT_FIELDS) {
      const problem = textProblem(input[key]);
      if (problem) throw ScribeException.invalidInput(`${fieldOf(index)}.${key}`, problem);
    }
    for (const key of ID_FIELDS) {
      const value = input[key];
      if (value !== null && value !== undefined && !idLengthFits(value)) {
        throw ScribeException.invalidInput(
          `${fieldOf(index)}.${key}`,
          `must be 1 to ${MAX_ID_CHARACTERS} characters long`,
        );
      }
    }
    for (const key of JSON_FIELDS) {
      const problem = jsonProblem(input[key]);
      if (problem) throw ScribeException.invalidInput(`${fieldOf(index)}.${key}`, problem);
    }
    const contentBytes = Buffer.byteLength(input.content, 'utf8');
    if (contentBytes > maxMessageBytes) {
      throw ScribeException.invalidInput(
        `${fieldOf(index)}.content`,
        `is ${contentBytes} bytes; the limit is ${maxMessageBytes} bytes (MAX_MESSAGE_BYTES)`,
      );
    }
    const totalBytes = contentBytes + jsonBytes(input.toolCalls) + jsonBytes(input.metadata);
    if (totalBytes > maxMessageBytes) {
      throw ScribeException.invalidInput(
        fieldOf(index),
        `content, toolCalls and metadata add up to ${totalBytes} bytes; the limit is ${maxMessageBytes} bytes (MAX_MESSAGE_BYTES)`,
      );
    }
    const clientId = input.clientMessageId;
    if (clientId === null || clientId === undefined) return;
    const earlier = seenClientIds.get(clientId);
    if (earlier !== undefined) {
      throw ScribeException.invalidInput(
        `${fieldOf(index)}.clientMessageId`,
        `repeats the clientMessageId of ${fieldOf(earlier)}`,
      );
    }
    seenClientIds.set(clientId, index);
  });
}

function idLengthFits(value: string): boolean {
  // Characters as the database counts them (code points); past twice the limit in UTF-16
  // units it cannot fit, and is not spread.
  if (value.length === 0 || value.length > 2 * MAX_ID_CHARACTERS) return false;
  return [...value].length <= MAX_ID_CHARACTERS;
}
