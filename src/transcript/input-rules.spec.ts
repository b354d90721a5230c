import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type NewMessage } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { MAX_JSON_DEPTH } from '../common/validation/json-body.js';
import { MAX_BATCH_MESSAGES, checkAppendTarget, checkNewMessages } from './input-rules.js';

const LIMIT = 40;
const fieldOf = (index: number) => `input.messages.${index}`;

function message(overrides: Partial<NewMessage> = {}): NewMessage {
  return { role: MessageRole.USER, content: 'hello', ...overrides };
}

/** The exception checkNewMessages throws for `inputs`, or undefined when it accepts them. */
function refusalOf(inputs: NewMessage[], limit = LIMIT): ScribeException | undefined {
  try {
    checkNewMessages(inputs, limit, fieldOf);
    return undefined;
  } catch (error) {
    return error as ScribeException;
  }
}

const NUL = 'must not contain the NUL character (U+0000)';
const LONE_SURROGATE = 'must be valid Unicode: it holds a lone UTF-16 surrogate (U+D800 to U+DFFF)';

describe(checkNewMessages.name, () => {
  it('accepts ordinary messages, absent optional fields included', () => {
    expect(
      refusalOf([
        message(),
        message({
          clientMessageId: null,
          toolName: undefined,
          toolCallId: null,
          toolCalls: undefined,
          metadata: null,
        }),
        message({ content: '', clientMessageId: 'c-1', toolName: 'search', toolCallId: 't-1' }),
      ]),
    ).toBeUndefined();
  });

  it.each(['content', 'clientMessageId', 'toolName', 'toolCallId'] as const)(
    'refuses NUL in %s, naming the field',
    (key) => {
      const refusal = refusalOf([message(), message({ [key]: 'a\u0000b' })]);

      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal?.code).toBe(ScribeErrorCode.BadUserInput);
      expect(refusal?.field).toBe(`input.messages.1.${key}`);
      expect(refusal?.message).toBe(`input.messages.1.${key}: ${NUL}`);
    },
  );

  it.each([
    ['a lone high surrogate', 'x\uD800y'],
    ['a lone low surrogate', '\uDC00'],
  ])('refuses %s', (_case, text) => {
    const refusal = refusalOf([message({ toolCallId: text })]);

    expect(refusal?.message).toBe(`input.messages.0.toolCallId: ${LONE_SURROGATE}`);
  });

  it('accepts a surrogate pair (a character outside the BMP)', () => {
    expect(refusalOf([message({ content: 'ok \uD83D\uDE00', clientMessageId: '\u{1F600}' })])).toBe(
      undefined,
    );
  });

  it('leaves JSON fields alone: their escapes keep NUL and lone surrogates', () => {
    expect(refusalOf([message({ metadata: { note: 'a\u0000\uD800' } })])).toBeUndefined();
  });

  describe('sizes', () => {
    it('accepts content of exactly the limit in UTF-8 bytes', () => {
      // 'é' is two bytes: 20 of them are 40 bytes.
      expect(refusalOf([message({ content: 'é'.repeat(20) })])).toBeUndefined();
    });

    it('refuses content over the limit in UTF-8 bytes, naming the field and both sizes', () => {
      const refusal = refusalOf([message(), message({ content: 'é'.repeat(20) + 'x' })]);

      expect(refusal?.field).toBe('input.messages.1.content');
      expect(refusal?.message).toBe(
        'input.messages.1.content: is 41 bytes; the limit is 40 bytes (MAX_MESSAGE_BYTES)',
      );
    });

    it('accepts content, toolCalls and metadata that add up to exactly the limit', () => {
      // 10 + 14 ({"name":"abc"}) + 16 (["x","y","zzzz"]) bytes.
      const inputs = [
        message({
          content: 'x'.repeat(10),
          toolCalls: { name: 'abc' },
          metadata: ['x', 'y', 'zzzz'],
        }),
      ];

      expect(refusalOf(inputs)).toBeUndefined();
    });

    it('refuses content, toolCalls and metadata that add up to more, naming the message', () => {
      const refusal = refusalOf([
        message({
          content: 'x'.repeat(11),
          toolCalls: { name: 'abc' },
          metadata: ['x', 'y', 'zzzz'],
        }),
      ]);

      expect(refusal?.field).toBe('input.messages.0');
      expect(refusal?.message).toBe(
        'input.messages.0: content, toolCalls and metadata add up to 41 bytes; the limit is 40 bytes (MAX_MESSAGE_BYTES)',
      );
    });

    it('counts null JSON fields as nothing', () => {
      expect(
        refusalOf([message({ content: 'x'.repeat(LIMIT), toolCalls: null, metadata: null })]),
      ).toBeUndefined();
    });

    it('counts toolCalls alone against the limit', () => {
      const refusal = refusalOf([message({ content: 'x'.repeat(30), toolCalls: 'y'.repeat(9) })]);

      expect(refusal?.message).toContain('add up to 41 bytes');
    });
  });

  describe('client ids', () => {
    it('refuses a client id repeated in one batch, naming both messages', () => {
      const refusal = refusalOf([
        message({ clientMessageId: 'a' }),
        message({ clientMessageId: 'b' }),
        message({ clientMessageId: 'a' }),
      ]);

      expect(refusal?.field).toBe('input.messages.2.clientMessageId');
      expect(refusal?.message).toBe(
        'input.messages.2.clientMessageId: repeats the clientMessageId of input.messages.0',
      );
    });

    it('names the latest earlier message with that id', () => {
      const refusal = refusalOf([
        message({ clientMessageId: 'b' }),
        message({ clientMessageId: 'a' }),
        message({ clientMessageId: 'a' }),
      ]);

      expect(refusal?.message).toContain('repeats the clientMessageId of input.messages.1');
    });

    it('does not count messages without a client id as repeats', () => {
      expect(
        refusalOf([
          message({ clientMessageId: null }),
          message({ clientMessageId: null }),
          message(),
          message(),
        ]),
      ).toBeUndefined();
    });
  });

  it('checks messages in order and reports the first problem', () => {
    const refusal = refusalOf([
      message({ content: 'x'.repeat(LIMIT + 1) }),
      message({ content: 'a\u0000' }),
    ]);

    expect(refusal?.field).toBe('input.messages.0.content');
  });
});

describe(checkAppendTarget.name, () => {
  const refusalFor = (sessionId: string, messages: number) => {
    try {
      checkAppendTarget(sessionId, messages, 'input.messages');
      return undefined;
    } catch (error) {
      return error as ScribeException;
    }
  };

  it('accepts a session id of the rule and 1 to 1000 messages', () => {
    expect(refusalFor('a', 1)).toBeUndefined();
    expect(refusalFor(`A-z_0.9:${'x'.repeat(120)}`, MAX_BATCH_MESSAGES)).toBeUndefined();
  });

  it.each(['', 'has space', 'slash/', 'x'.repeat(129), 'ümlaut'])(
    'refuses the session id %p as BAD_USER_INPUT naming input.sessionId',
    (sessionId) => {
      const refusal = refusalFor(sessionId, 1);
      expect(refusal?.code).toBe(ScribeErrorCode.BadUserInput);
      expect(refusal?.field).toBe('input.sessionId');
    },
  );

  it.each([0, MAX_BATCH_MESSAGES + 1])('refuses a batch of %p messages', (count) => {
    const refusal = refusalFor('s', count);
    expect(refusal?.field).toBe('input.messages');
    expect(refusal?.message).toBe(
      `input.messages: must hold 1 to ${MAX_BATCH_MESSAGES} messages; it holds ${count}`,
    );
  });
});

describe('id fields', () => {
  it.each(['clientMessageId', 'toolName', 'toolCallId'] as const)(
    'refuses an empty %s or one over 256 characters, counting characters as the database does',
    (key) => {
      expect(refusalOf([message({ [key]: 'x'.repeat(256) })], 10_000)).toBeUndefined();
      // 256 characters of two UTF-16 units each still fit.
      expect(refusalOf([message({ [key]: '\u{1F600}'.repeat(256) })], 10_000)).toBeUndefined();
      for (const value of ['', 'x'.repeat(257), '\u{1F600}'.repeat(257)]) {
        const refusal = refusalOf([message({ [key]: value })], 10_000);
        expect(refusal?.field).toBe(`input.messages.0.${key}`);
        expect(refusal?.message).toMatch(/must be 1 to 256 characters long/);
      }
    },
  );
});

describe('JSON fields of a message', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { k: value };
    return value;
  };

  it('refuses toolCalls and metadata past the bounds as BAD_USER_INPUT naming the field', () => {
    for (const key of ['toolCalls', 'metadata'] as const) {
      const refusal = refusalOf([message({ [key]: nested(MAX_JSON_DEPTH + 1) })], 10_000);
      expect(refusal?.field).toBe(`input.messages.0.${key}`);
    }
  });
});
