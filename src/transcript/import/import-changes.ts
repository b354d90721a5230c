import { ScribeException } from '../../common/errors/scribe.exception.js';
import { boundedTextProblem } from '../../common/validation/storable-values.js';
import { type MessageChanges } from '../../message/message-record.js';
import { MAX_REASON_CHARACTERS } from '../changes/dto/redact-message.input.js';
import { count, nullableText, timeOf } from './import-fields.js';

/** The keys an export writes of a message's edits and redaction. */
export const CHANGE_KEYS = [
  'revision',
  'editedAt',
  'redacted',
  'redactedAt',
  'redactionReason',
] as const;

/** What an imported message keeps of its edits and redaction where it came from. */
export type ImportedChanges = Partial<MessageChanges>;

/** As for a session's (see MAX_IMPORTED_REVISION): Int is 32 bits, and each edit adds one. */
const MAX_MESSAGE_REVISION = 1_000_000_000;
// How far ahead of this clock an edit or a redaction may be dated.
const TIME_AHEAD_MS = 60_000;

/**
 * What an export's line says the message's edits and redaction came to, checked as a whole:
 * nothing for a message never changed (revision 1 or absent, the rest absent or null), which
 * is stored as an append is; otherwise its revision, the time of its last edit, and the time
 * and reason of its redaction, with the content, metadata and tool calls a tombstone has.
 * BAD_USER_INPUT naming the field for a line that says what no message can be.
 */
export function changesOf(
  body: Record<string, unknown>,
  at: string,
  createdAt: number,
): ImportedChanges {
  const revision = body.revision == null ? 1 : count(body, 'revision', at);
  if (revision < 1 || revision > MAX_MESSAGE_REVISION) {
    throw ScribeException.invalidInput(`${at}.revision`, `must be 1 to ${MAX_MESSAGE_REVISION}`);
  }
  const editedAt = changeTime(body, 'editedAt', at, createdAt);
  const redactedAt = changeTime(body, 'redactedAt', at, createdAt);
  if (body.redacted !== undefined && body.redacted !== (redactedAt !== null)) {
    throw ScribeException.invalidInput(
      `${at}.redacted`,
      'must be true exactly when redactedAt is set (and false, or absent, otherwise)',
    );
  }
  const reason = nullableText(body, 'redactionReason', at);
  if ((reason !== null) !== (redactedAt !== null)) {
    throw ScribeException.invalidInput(
      `${at}.redactionReason`,
      'must be given exactly when the message is redacted (redactedAt)',
    );
  }
  if (reason !== null) {
    const problem = boundedTextProblem(reason, MAX_REASON_CHARACTERS);
    if (problem) throw ScribeException.invalidInput(`${at}.redactionReason`, problem);
  }
  if (redactedAt !== null) {
    const kept = ['content', 'metadata', 'toolCalls'].find((key) =>
      key === 'content' ? body[key] !== '' : body[key] != null,
    );
    if (kept !== undefined) {
      throw ScribeException.invalidInput(
        `${at}.${kept}`,
        'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
      );
    }
  }
  if (editedAt !== null && redactedAt !== null && editedAt > redactedAt) {
    throw ScribeException.invalidInput(
      `${at}.editedAt`,
      'is after redactedAt: a redacted message is never edited',
    );
  }
  const changed = editedAt !== null || redactedAt !== null;
  if (changed !== revision > 1) {
    throw ScribeException.invalidInput(
      `${at}.revision`,
      changed
        ? 'must be more than 1 on a message edited or redacted'
        : 'must be 1 on a message neither edited nor redacted',
    );
  }
  return changed ? { revision, editedAt, redactedAt, redactionReason: reason } : {};
}

/** A time of a change: absent or null, or from the message's own time to about now. */
function changeTime(
  body: Record<string, unknown>,
  key: string,
  at: string,
  createdAt: number,
): number | null {
  if (body[key] == null) return null;
  const time = timeOf(body, key, at);
  if (time < createdAt) throw ScribeException.invalidInput(`${at}.${key}`, 'is before createdAt');
  if (time > Date.now() + TIME_AHEAD_MS) {
    throw ScribeException.invalidInput(`${at}.${key}`, 'is in the future');
  }
  return time;
}
