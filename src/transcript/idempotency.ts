import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';

// What a message says, as the client sent it: a retry must say the same.
const COMPARED = ['role', 'content', 'toolName', 'toolCallId', 'toolCalls', 'metadata'] as const;
// What no edit nor redaction changes: all a retry of a changed message can be compared with,
// since what it was first accepted with is gone (see the message-changes migration).
const KEPT_BY_CHANGES = ['role', 'toolName', 'toolCallId'] as const;

/**
 * The first field in which `input` differs from `accepted`, the message its client id was
 * first accepted as; undefined when it is an exact retry. Absent and null are the same, and
 * JSON is compared by value (a database may give object keys back in another order). A message
 * edited or redacted since is compared by the fields changes keep, and answered as it now is.
 */
export function conflictingField(
  input: NewMessage,
  accepted: MessageRecord,
): (typeof COMPARED)[number] | undefined {
  return differingIn((accepted.revision ?? 1) > 1 ? 'kept' : 'all', input, accepted);
}

/**
 * The first field of `fields` in which `input` differs from `accepted`: all of them, or those
 * no edit nor redaction changes (`kept`).
 */
export function differingIn(
  fields: 'all' | 'kept',
  input: NewMessage,
  accepted: MessageRecord,
): (typeof COMPARED)[number] | undefined {
  const compared = fields === 'kept' ? KEPT_BY_CHANGES : COMPARED;
  return compared.find((field) => !sameValue(input[field] ?? null, accepted[field] ?? null));
}

function sameValue(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) {
    return false;
  }
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  const rightRecord = right as Record<string, unknown>;
  return leftKeys.every(
    (key) =>
      Object.hasOwn(rightRecord, key) &&
      sameValue((left as Record<string, unknown>)[key], rightRecord[key]),
  );
}

/**
 * A client id names one message: sent again with other content, it is a client's bug (or a
 * reused key), and answering the old message would hide it. Throws IDEMPOTENCY_CONFLICT for
 * the first input whose client id `earlier` answers with another message; called before
 * anything is accepted, so the whole append changes nothing. `fieldOf(i)` names input i.
 */
export function refuseChangedRetries(
  inputs: readonly NewMessage[],
  earlier: ReadonlyMap<string, { record: MessageRecord }>,
  fieldOf: (index: number) => string,
): void {
  inputs.forEach((input, index) => {
    const found = input.clientMessageId ? earlier.get(input.clientMessageId) : undefined;
    const field = found && conflictingField(input, found.record);
    if (field) {
      const at = `${fieldOf(index)}.clientMessageId`;
      const said = `${fieldOf(index)}: clientMessageId ${JSON.stringify(input.clientMessageId)} was accepted before with`;
      const advice = 'nothing was stored. Send a new clientMessageId for a new message.';
      throw new ScribeException(
        ScribeErrorCode.IdempotencyConflict,
        `${said} another ${field}; ${advice}`,
        at,
        // Naming the field would let a caller that cannot read guess a message field by field.
        new ScribeException(
          ScribeErrorCode.IdempotencyConflict,
          `${said} something else; ${advice}`,
          at,
        ),
      );
    }
  });
}
