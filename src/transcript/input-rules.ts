import { ScribeException } from '../common/errors/scribe.exception.js';
import { type NewMessage } from '../message/message-record.js';

// The text fields of a message. JSON fields (toolCalls, metadata) need no check: they are
// stored as JSON text, whose escapes keep any string, NUL and lone surrogates included.
const TEXT_FIELDS = ['content', 'clientMessageId', 'toolName', 'toolCallId'] as const;

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

/** Why a text value cannot be stored as sent, or undefined when it can. */
export function textProblem(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!value.isWellFormed()) {
    return 'must be valid Unicode: it holds a lone UTF-16 surrogate (U+D800 to U+DFFF)';
  }
  return undefined;
}

function jsonBytes(value: unknown): number {
  return value === undefined || value === null
    ? 0
    : Buffer.byteLength(JSON.stringify(value), 'utf8');
}
