import { MessageRole } from '../message/message-role.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { conflictingField, refuseChangedRetries } from './idempotency.js';

describe(conflictingField.name, () => {
  const accepted = acceptedRecord('s', 'hello', {
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCallId: 't-1',
    toolCalls: [{ id: 1, args: { q: 'x', n: [1, 2] } }],
    metadata: { a: 1, b: { c: null } },
  });
  const retry = {
    role: accepted.role,
    content: 'hello',
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCallId: 't-1',
    toolCalls: [{ id: 1, args: { q: 'x', n: [1, 2] } }],
    metadata: { a: 1, b: { c: null } },
  };

  it('finds none in an exact retry, JSON keys in another order included', () => {
    expect(conflictingField(retry, accepted)).toBeUndefined();
    expect(
      conflictingField({ ...retry, metadata: { b: { c: null }, a: 1 } }, accepted),
    ).toBeUndefined();
  });

  it('treats an absent field as null', () => {
    const plain = acceptedRecord('s', 'plain', { clientMessageId: 'c-2' });
    expect(conflictingField({ role: plain.role, content: 'plain' }, plain)).toBeUndefined();
    expect(
      conflictingField({ role: plain.role, content: 'plain', metadata: null }, plain),
    ).toBeUndefined();
  });

  it.each([
    ['role', { role: MessageRole.SYSTEM }],
    ['content', { content: 'hello!' }],
    ['toolName', { toolName: null }],
    ['toolCallId', { toolCallId: 't-2' }],
    ['toolCalls', { toolCalls: [{ id: 1, args: { q: 'x', n: [2, 1] } }] }],
    ['metadata', { metadata: { a: 1, b: { c: 0 } } }],
    ['metadata', { metadata: { a: 1, b: { c: null }, d: 1 } }],
    ['metadata', { metadata: { a: 1 } }],
    ['metadata', { metadata: [1] }],
    ['metadata', { metadata: '{"a":1}' }],
  ])('names %s when it differs', (field, change) => {
    expect(conflictingField({ ...retry, ...change }, accepted)).toBe(field);
  });

  it('tells an array from an object with the same keys, and a key from a missing one', () => {
    const arrayLike = acceptedRecord('s', 'x', { metadata: { 0: 'a' } });
    expect(
      conflictingField({ role: arrayLike.role, content: 'x', metadata: ['a'] }, arrayLike),
    ).toBe('metadata');
    const withUndefined = acceptedRecord('s', 'x', { metadata: { a: 1, b: 2 } });
    expect(
      conflictingField(
        { role: withUndefined.role, content: 'x', metadata: { a: 1, c: 2 } },
        withUndefined,
      ),
    ).toBe('metadata');
  });
});

describe(`${conflictingField.name} of a message edited or redacted since`, () => {
  const original = {
    role: MessageRole.TOOL,
    content: 'first words',
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCallId: 't-1',
    toolCalls: [{ id: 1 }],
    metadata: { a: 1 },
  };
  const edited = acceptedRecord('s', 'later words', {
    ...original,
    content: 'later words',
    toolCalls: null,
    metadata: { a: 2 },
    revision: 2,
    editedAt: 1,
  });
  const redacted = acceptedRecord('s', '', {
    ...original,
    content: '',
    toolCalls: null,
    metadata: null,
    revision: 3,
    redactedAt: 2,
    redactionReason: 'spam',
  });

  it('finds none in a retry of what was first sent: what a change replaced is not compared', () => {
    expect(conflictingField(original, edited)).toBeUndefined();
    expect(conflictingField(original, redacted)).toBeUndefined();
    expect(
      conflictingField({ ...original, content: 'other', metadata: [1] }, edited),
    ).toBeUndefined();
  });

  it.each([
    ['role', { role: MessageRole.USER }],
    ['toolName', { toolName: 'fetch' }],
    ['toolName', { toolName: null }],
    ['toolCallId', { toolCallId: 't-2' }],
  ])('still names %s, which no change touches, when it differs', (field, change) => {
    expect(conflictingField({ ...original, ...change }, edited)).toBe(field);
    expect(conflictingField({ ...original, ...change }, redacted)).toBe(field);
  });

  it('compares every field of a message at revision 1, as of one never changed', () => {
    const unchanged = acceptedRecord('s', 'first words', { ...original, revision: 1 });
    expect(conflictingField(original, unchanged)).toBeUndefined();
    expect(conflictingField({ ...original, content: 'other' }, unchanged)).toBe('content');
    expect(conflictingField({ ...original, toolCalls: null }, unchanged)).toBe('toolCalls');
    expect(conflictingField({ ...original, metadata: { a: 2 } }, unchanged)).toBe('metadata');
  });
});

describe(refuseChangedRetries.name, () => {
  const accepted = acceptedRecord('s', 'hello', { clientMessageId: 'c-1' });
  const earlier = new Map([['c-1', { record: accepted }]]);
  const fieldOf = (index: number) => `input.messages.${index}`;
  const message = (content: string, clientMessageId?: string) => ({
    role: accepted.role,
    content,
    clientMessageId,
  });

  /** What refuseChangedRetries threw for `inputs`, or undefined. */
  function refusal(inputs: Parameters<typeof refuseChangedRetries>[0]) {
    try {
      refuseChangedRetries(inputs, earlier, fieldOf);
      return undefined;
    } catch (error) {
      return error as ScribeException;
    }
  }

  it('lets exact retries and new ids through', () => {
    expect(refusal([message('hello', 'c-1'), message('new', 'c-2'), message('x')])).toBe(undefined);
  });

  it('refuses the first retry that differs, naming its field, and a milder answer to non-readers', () => {
    const refused = refusal([message('new', 'c-2'), message('changed', 'c-1')]);
    expect(refused).toBeInstanceOf(ScribeException);
    expect(refused?.code).toBe(ScribeErrorCode.IdempotencyConflict);
    expect(refused?.field).toBe('input.messages.1.clientMessageId');
    expect(refused?.message).toBe(
      'input.messages.1: clientMessageId "c-1" was accepted before with another content; nothing was stored. Send a new clientMessageId for a new message.',
    );
    expect(refused?.toNonReaders?.code).toBe(ScribeErrorCode.IdempotencyConflict);
    expect(refused?.toNonReaders?.field).toBe('input.messages.1.clientMessageId');
    expect(refused?.toNonReaders?.message).toBe(
      'input.messages.1: clientMessageId "c-1" was accepted before with something else; nothing was stored. Send a new clientMessageId for a new message.',
    );
  });
});
