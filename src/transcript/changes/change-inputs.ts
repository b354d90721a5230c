import { ScribeException } from '../../common/errors/scribe.exception.js';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import {
  boundedTextProblem,
  jsonBytes,
  jsonProblem,
  textProblem,
} from '../../common/validation/storable-values.js';
import { type MessageEdit } from '../../database/message-changes.js';
import { type EditMessageInput } from './dto/edit-message.input.js';
import { MAX_REASON_CHARACTERS, type RedactMessageInput } from './dto/redact-message.input.js';

// Every message id Scribe gives is a UUID (see message-id.ts); anything else names none.
const MESSAGE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The message a change names; BAD_USER_INPUT for a session id or message id that cannot be one. */
export function checkTarget(input: { sessionId: string; id: string }): void {
  if (!SESSION_ID_PATTERN.test(input.sessionId)) {
    throw ScribeException.invalidInput('input.sessionId', `must be ${SESSION_ID_RULE}`);
  }
  if (!MESSAGE_ID.test(input.id)) {
    throw ScribeException.invalidInput('input.id', 'must be a message id (a UUID)');
  }
}

/**
 * The edit the input asks for, checked in plain code as an append's message is (the input
 * carries free-form JSON): BAD_USER_INPUT naming the field for what could not be stored as
 * sent, for an expected revision that no message has, and for no change at all.
 */
export function editOf(input: EditMessageInput, maxMessageBytes: number): MessageEdit {
  checkTarget(input);
  const { content, metadata, expectedRevision } = input;
  if (content === null) {
    throw ScribeException.invalidInput('input.content', 'cannot be null: send "" for no text');
  }
  if (content !== undefined) {
    const problem = textProblem(content);
    if (problem) throw ScribeException.invalidInput('input.content', problem);
  }
  if (metadata !== undefined && metadata !== null) {
    const problem = jsonProblem(metadata);
    if (problem) throw ScribeException.invalidInput('input.metadata', problem);
  }
  const bytes = Buffer.byteLength(content ?? '', 'utf8') + jsonBytes(metadata);
  if (bytes > maxMessageBytes) {
    throw ScribeException.invalidInput(
      'input',
      `content and metadata add up to ${bytes} bytes; the limit is ${maxMessageBytes} bytes (MAX_MESSAGE_BYTES)`,
    );
  }
  if (expectedRevision !== undefined && expectedRevision !== null && expectedRevision < 1) {
    throw ScribeException.invalidInput('input.expectedRevision', 'must be 1 or more');
  }
  if (content === undefined && metadata === undefined) {
    throw ScribeException.invalidInput('input', 'must change content, metadata or both');
  }
  return {
    ...(content !== undefined ? { content } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
}

/** The redaction's reason, checked; BAD_USER_INPUT naming the field otherwise. */
export function reasonOf(input: RedactMessageInput): string {
  checkTarget(input);
  const problem = boundedTextProblem(input.reason, MAX_REASON_CHARACTERS);
  if (problem) throw ScribeException.invalidInput('input.reason', problem);
  return input.reason;
}
