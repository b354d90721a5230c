import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { checkTarget, editOf, reasonOf } from './change-inputs.js';
import { type EditMessageInput } from './dto/edit-message.input.js';

const SESSION = 'tenant.a:b_c-9';
const ID = '0190a5b4-7c1e-7d2a-9b3c-4d5e6f708192';
const LIMIT = 20;

const edit = (fields: Partial<EditMessageInput> = {}) =>
  editOf({ sessionId: SESSION, id: ID, ...fields }, LIMIT);

/** What `change` was refused with: its field and message (always BAD_USER_INPUT). */
function refusal(change: () => unknown): { field: string | undefined; message: string } {
  try {
    change();
  } catch (error) {
    expect(error).toBeInstanceOf(ScribeException);
    expect((error as ScribeException).code).toBe(ScribeErrorCode.BadUserInput);
    const { field, message } = error as ScribeException;
    return { field, message };
  }
  throw new Error('not refused');
}

describe(checkTarget.name, () => {
  it.each([
    ['a UUID', ID],
    ['a UUID in capitals', ID.toUpperCase()],
    ['the nil UUID', '00000000-0000-0000-0000-000000000000'],
  ])('takes %s in a session', (_case, id) => {
    expect(() => checkTarget({ sessionId: SESSION, id })).not.toThrow();
    expect(() => checkTarget({ sessionId: 'x'.repeat(128), id })).not.toThrow();
  });

  it.each([
    ['empty', ''],
    ['with a space', 'a b'],
    ['of 129 characters', 'x'.repeat(129)],
    ['with a slash', 's/1'],
  ])('refuses a session id %s, before the id', (_case, sessionId) => {
    expect(refusal(() => checkTarget({ sessionId, id: 'not an id' }))).toEqual({
      field: 'input.sessionId',
      message: 'input.sessionId: must be 1-128 characters of A-Z a-z 0-9 . _ : -',
    });
  });

  it.each([
    ['empty', ''],
    ['a word', 'message-1'],
    ['a UUID with something before it', `x${ID}`],
    ['a UUID with something after it', `${ID}x`],
    ['a UUID with a letter past f', ID.replace(/a/, 'g')],
    ['a UUID a digit short', ID.slice(1)],
    ['a UUID a digit long in a group', ID.replace('-7c1e-', '-7c1e0-')],
    ['a UUID without its dashes', ID.replaceAll('-', '')],
    ['a UUID with a group too short', ID.replace('-7c1e-', '-7c1-')],
    ['a UUID in braces', `{${ID}}`],
  ])('refuses an id that is %s', (_case, id) => {
    expect(refusal(() => checkTarget({ sessionId: SESSION, id }))).toEqual({
      field: 'input.id',
      message: 'input.id: must be a message id (a UUID)',
    });
  });

  it('refuses a UUID each of whose groups is one digit short or long', () => {
    const groups = ID.split('-');
    for (let group = 0; group < groups.length; group++) {
      for (const changed of [groups[group].slice(1), `${groups[group]}0`]) {
        const id = groups.map((part, index) => (index === group ? changed : part)).join('-');
        expect(refusal(() => checkTarget({ sessionId: SESSION, id })).field).toBe('input.id');
      }
    }
  });
});

describe(editOf.name, () => {
  it('takes new content alone, and gives only what changes', () => {
    expect(edit({ content: 'new words' })).toStrictEqual({ content: 'new words' });
    expect(edit({ content: '' })).toStrictEqual({ content: '' });
  });

  it('takes new metadata alone, null (which clears it) included', () => {
    expect(edit({ metadata: { a: [1] } })).toStrictEqual({ metadata: { a: [1] } });
    expect(edit({ metadata: null })).toStrictEqual({ metadata: null });
    expect(edit({ metadata: 0 })).toStrictEqual({ metadata: 0 });
  });

  it('takes both, with any expected revision of 1 or more, or none', () => {
    for (const expectedRevision of [undefined, null, 1, 7]) {
      expect(edit({ content: 'x', metadata: { b: 2 }, expectedRevision })).toStrictEqual({
        content: 'x',
        metadata: { b: 2 },
      });
    }
  });

  it('checks the target first', () => {
    expect(refusal(() => editOf({ sessionId: 'a b', id: ID, content: null }, LIMIT)).field).toBe(
      'input.sessionId',
    );
    expect(refusal(() => editOf({ sessionId: SESSION, id: 'x', content: null }, LIMIT))).toEqual({
      field: 'input.id',
      message: 'input.id: must be a message id (a UUID)',
    });
  });

  it.each<[string, Partial<EditMessageInput>, string, string]>([
    [
      'null content',
      { content: null },
      'input.content',
      'input.content: cannot be null: send "" for no text',
    ],
    [
      'null content, even with metadata',
      { content: null, metadata: { a: 1 } },
      'input.content',
      'input.content: cannot be null: send "" for no text',
    ],
    [
      'content with a NUL',
      { content: 'a\u0000b' },
      'input.content',
      'input.content: must not contain the NUL character (U+0000)',
    ],
    [
      'content with a lone surrogate',
      { content: 'a\ud800' },
      'input.content',
      'input.content: must be valid Unicode: it holds a lone UTF-16 surrogate (U+D800 to U+DFFF)',
    ],
    [
      'metadata nested too deep',
      { metadata: JSON.parse('['.repeat(21) + ']'.repeat(21)) },
      'input.metadata',
      'input.metadata: is nested more than 20 levels deep',
    ],
    [
      'metadata of a number too large',
      { content: 'x', metadata: Number.POSITIVE_INFINITY },
      'input.metadata',
      'input.metadata: holds a number too large for JSON (as 1e400), which would be stored as null',
    ],
    [
      'an expected revision of 0',
      { content: 'x', expectedRevision: 0 },
      'input.expectedRevision',
      'input.expectedRevision: must be 1 or more',
    ],
    [
      'a negative expected revision',
      { metadata: null, expectedRevision: -3 },
      'input.expectedRevision',
      'input.expectedRevision: must be 1 or more',
    ],
    ['no change at all', {}, 'input', 'input: must change content, metadata or both'],
    [
      'no change, only an expected revision',
      { expectedRevision: 2 },
      'input',
      'input: must change content, metadata or both',
    ],
  ])('refuses %s, naming the field', (_case, fields, field, message) => {
    expect(refusal(() => edit(fields))).toEqual({ field, message });
  });

  describe('the bound on the size of a message', () => {
    it('takes content of exactly MAX_MESSAGE_BYTES, counted in UTF-8 bytes', () => {
      expect(edit({ content: 'x'.repeat(LIMIT) })).toStrictEqual({ content: 'x'.repeat(LIMIT) });
      expect(edit({ content: 'é'.repeat(LIMIT / 2) })).toStrictEqual({
        content: 'é'.repeat(LIMIT / 2),
      });
    });

    it('refuses content one byte over, saying by how much', () => {
      expect(refusal(() => edit({ content: 'é'.repeat(LIMIT / 2) + 'x' }))).toEqual({
        field: 'input',
        message:
          'input: content and metadata add up to 21 bytes; the limit is 20 bytes (MAX_MESSAGE_BYTES)',
      });
    });

    it('adds the metadata as JSON text to the content', () => {
      // '{"a":"xy"}' is 10 bytes.
      expect(edit({ content: 'x'.repeat(10), metadata: { a: 'xy' } })).toStrictEqual({
        content: 'x'.repeat(10),
        metadata: { a: 'xy' },
      });
      expect(refusal(() => edit({ content: 'x'.repeat(11), metadata: { a: 'xy' } }))).toEqual({
        field: 'input',
        message:
          'input: content and metadata add up to 21 bytes; the limit is 20 bytes (MAX_MESSAGE_BYTES)',
      });
      expect(refusal(() => edit({ metadata: 'x'.repeat(LIMIT - 1) })).message).toBe(
        'input: content and metadata add up to 21 bytes; the limit is 20 bytes (MAX_MESSAGE_BYTES)',
      );
    });

    it('counts no bytes for metadata null or left out', () => {
      expect(edit({ content: 'x'.repeat(LIMIT), metadata: null })).toStrictEqual({
        content: 'x'.repeat(LIMIT),
        metadata: null,
      });
      expect(editOf({ sessionId: SESSION, id: ID, metadata: null }, 0)).toStrictEqual({
        metadata: null,
      });
      expect(editOf({ sessionId: SESSION, id: ID, content: '' }, 0)).toStrictEqual({
        content: '',
      });
    });

    it('is checked before the expected revision', () => {
      expect(
        refusal(() => edit({ content: 'x'.repeat(LIMIT + 1), expectedRevision: 0 })).field,
      ).toBe('input');
    });
  });
});

describe(reasonOf.name, () => {
  const redaction = (reason: string, sessionId = SESSION, id = ID) =>
    reasonOf({ sessionId, id, reason });

  it('gives the reason, from 1 to 512 characters (code points)', () => {
    expect(redaction('spam')).toBe('spam');
    expect(redaction('x')).toBe('x');
    expect(redaction('x'.repeat(512))).toBe('x'.repeat(512));
    expect(redaction('😀'.repeat(512))).toBe('😀'.repeat(512));
  });

  it.each([
    ['empty', '', 'input.reason: must be 1 to 512 characters long'],
    ['too long', 'x'.repeat(513), 'input.reason: must be 1 to 512 characters long'],
    ['with a NUL', 'a\u0000', 'input.reason: must not contain the NUL character (U+0000)'],
  ])('refuses a reason %s, naming it', (_case, reason, message) => {
    expect(refusal(() => redaction(reason))).toEqual({ field: 'input.reason', message });
  });

  it('checks the target first', () => {
    expect(refusal(() => redaction('', 'a b')).field).toBe('input.sessionId');
    expect(refusal(() => redaction('', SESSION, 'x')).field).toBe('input.id');
  });
});
