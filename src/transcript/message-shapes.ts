import { getMetadataStorage, validateSync } from 'class-validator';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { firstValidationFailure } from '../common/validation/validation.pipe.js';
import { MessageInput } from './dto/message.input.js';
import { attempt, plainJsonCopy } from './host-json.js';
import { checkAppendTarget } from './input-rules.js';

// The rules of the global validation pipe, so that an input refused here is refused as the
// pipe would refuse it: unknown properties too.
const RULES = { whitelist: true, forbidNonWhitelisted: true } as const;
// MessageInput's fields, as class-validator knows them (the whitelist's): a key the copy
// refuses itself, before class-validator, which lets an own key `__proto__` through.
const FIELDS: ReadonlySet<string> = new Set(
  getMetadataStorage()
    .getTargetValidationMetadatas(MessageInput, '', true, false)
    .map((rule) => rule.propertyName),
);
// The free-form JSON fields, copied as plain JSON (see plainJsonCopy).
const JSON_FIELDS: ReadonlySet<string> = new Set(['toolCalls', 'metadata']);

/**
 * What GraphQL checks of an append's input before the resolver sees it, for a host that calls
 * TranscriptService.append without GraphQL: a session id that is a string, a list of messages,
 * each an object of MessageInput's fields with their types. BAD_USER_INPUT naming the first
 * failing field, as the validation pipe names it, and never a TypeError of the host's values
 * (a getter or a Proxy that throws, a BigInt, a cycle). Returns copies of the messages, read
 * once each, their JSON plain and copied no further than `maxMessageBytes` of it: those are
 * checked next (the input rules) and stored.
 */
export function plainMessagesOf(
  sessionId: unknown,
  messages: unknown,
  fieldOf: (index: number) => string,
  batchField: string,
  maxMessageBytes: number,
): MessageInput[] {
  if (typeof sessionId !== 'string') {
    throw ScribeException.invalidInput('input.sessionId', 'must be a string');
  }
  if (!attempt(batchField, () => Array.isArray(messages))) {
    throw ScribeException.invalidInput(batchField, 'must be a list');
  }
  const list = messages as unknown[];
  const length = attempt(batchField, () => list.length);
  // Bounded before it is walked.
  checkAppendTarget(sessionId, length, batchField);
  const copies: MessageInput[] = [];
  for (let index = 0; index < length; index++) {
    const field = fieldOf(index);
    copies.push(
      plainMessageOf(
        attempt(field, () => list[index]),
        field,
        maxMessageBytes,
      ),
    );
  }
  return copies;
}

function plainMessageOf(message: unknown, field: string, maxBytes: number): MessageInput {
  if (
    typeof message !== 'object' ||
    message === null ||
    attempt(field, () => Array.isArray(message))
  ) {
    throw ScribeException.invalidInput(field, 'must be an object');
  }
  // A class instance's fields on its prototype (getters), or own ones not enumerable, would be
  // read as absent: a clientMessageId dropped so, a re-send is stored twice. A MessageInput
  // (a host's own GraphQL argument, built by class-transformer) holds its fields as its own.
  const prototype = attempt(field, () => Object.getPrototypeOf(message) as object | null);
  const plain = prototype === null || Object.getPrototypeOf(prototype) === null;
  if (!plain && prototype !== MessageInput.prototype) {
    throw ScribeException.invalidInput(field, 'must be a plain object (as JSON.parse gives)');
  }
  const hidden = attempt(field, () =>
    Object.getOwnPropertyNames(message).find(
      (key) => !Object.prototype.propertyIsEnumerable.call(message, key),
    ),
  );
  if (hidden !== undefined) {
    throw ScribeException.invalidInput(`${field}.${hidden}`, 'must be an enumerable property');
  }
  if (attempt(field, () => Object.getOwnPropertySymbols(message)).length > 0) {
    throw ScribeException.invalidInput(field, 'has a symbol key, which is no field of a message');
  }
  // class-validator finds the rules by the object's class; class-transformer is not used, as
  // it would walk the free-form JSON (see PlainChecked). Each property is checked by name and
  // defined, not assigned: Object.assign made an own key `__proto__` the copy's prototype,
  // and the refusal named `input.messages.0.undefined`.
  const input = Object.create(MessageInput.prototype) as MessageInput;
  for (const key of attempt(field, () => Object.keys(message))) {
    if (!FIELDS.has(key)) {
      throw ScribeException.invalidInput(`${field}.${key}`, `property ${key} should not exist`);
    }
    const read = attempt(`${field}.${key}`, () => (message as Record<string, unknown>)[key]);
    // A boxed String passes class-validator's IsString, answers as its text and is stored as
    // "[object Object]": two client ids would be one. Every field but the JSON ones is text.
    if (!JSON_FIELDS.has(key) && isObjectLike(read)) {
      throw ScribeException.invalidInput(`${field}.${key}`, 'must be a string, not an object');
    }
    const value = JSON_FIELDS.has(key) ? plainJsonCopy(read, `${field}.${key}`, maxBytes) : read;
    Object.defineProperty(input, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const failure = firstValidationFailure(validateSync(input, RULES), field);
  if (failure) throw ScribeException.invalidInput(failure.field, failure.reason);
  return input;
}

function isObjectLike(value: unknown): boolean {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}
