import { validateSync } from 'class-validator';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { firstValidationFailure } from '../common/validation/validation.pipe.js';
import { MessageInput } from './dto/message.input.js';
import { checkAppendTarget } from './input-rules.js';

// The rules of the global validation pipe, so that an input refused here is refused as the
// pipe would refuse it: unknown properties too.
const RULES = { whitelist: true, forbidNonWhitelisted: true } as const;

/**
 * What GraphQL checks of an append's input before the resolver sees it, for a host that calls
 * TranscriptService.append without GraphQL: a session id that is a string, a list of messages,
 * each an object of MessageInput's fields with their types. INVALID_INPUT naming the first
 * failing field, as the validation pipe names it. One pass; the free-form JSON is not walked
 * (the input rules bound it next).
 */
export function checkMessageShapes(
  sessionId: unknown,
  messages: unknown,
  fieldOf: (index: number) => string,
  batchField: string,
): void {
  if (typeof sessionId !== 'string') {
    throw ScribeException.invalidInput('input.sessionId', 'must be a string');
  }
  if (!Array.isArray(messages)) throw ScribeException.invalidInput(batchField, 'must be a list');
  // Bounded before it is walked.
  checkAppendTarget(sessionId, messages.length, batchField);
  messages.forEach((message: unknown, index) => {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      throw ScribeException.invalidInput(fieldOf(index), 'must be an object');
    }
    // class-validator finds the rules by the object's class; class-transformer is not used, as
    // it would walk the free-form JSON (see PlainChecked).
    const input = Object.assign(Object.create(MessageInput.prototype) as MessageInput, message);
    const failure = firstValidationFailure(validateSync(input, RULES), fieldOf(index));
    if (failure) throw ScribeException.invalidInput(failure.field, failure.reason);
  });
}
