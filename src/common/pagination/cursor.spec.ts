import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { decodeCursor, encodeCursor } from './cursor.js';

/** The exception decodeCursor throws for `cursor`, or undefined when it throws nothing. */
function refusal(cursor: string, field?: string): unknown {
  try {
    decodeCursor(cursor, field);
    return undefined;
  } catch (error) {
    return error;
  }
}

function base64(text: string, encoding: 'base64' | 'base64url' = 'base64url'): string {
  return Buffer.from(text, 'utf8').toString(encoding);
}

describe(encodeCursor.name, () => {
  it.each([
    ['a plain key', '0000000001ab-000001-i'],
    ['a key with colons', 'scribe:v1:2024-01-01T00:00:00Z:42'],
    ['a key with unicode', 'séance 会話 🗨️'],
    ['a key with spaces and symbols', ' a/b+c=d?e&f '],
    ['a one-character key', 'x'],
    ['a long key', 'k'.repeat(1000)],
  ])('round-trips %s through decodeCursor', (_, key) => {
    expect(decodeCursor(encodeCursor(key))).toBe(key);
  });

  it('produces an opaque, URL-safe string that does not show the key', () => {
    const key = 'session-visible-key';

    const cursor = encodeCursor(key);

    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain(key);
    expect(cursor).not.toContain('scribe');
  });

  it('gives different keys different cursors', () => {
    expect(encodeCursor('a')).not.toBe(encodeCursor('b'));
  });
});

describe(decodeCursor.name, () => {
  const garbage: [string, string][] = [
    ['an empty string', ''],
    ['text with spaces and punctuation', 'not a cursor!'],
    ['base64url of text without the prefix', base64('some-key')],
    ['base64url of an older version', base64('scribe:v0:some-key')],
    ['base64url of the prefix with another case', base64('Scribe:v1:some-key')],
    ['the prefix in clear', 'scribe:v1:some-key'],
    ['base64url of the prefix alone (an empty key)', base64('scribe:v1:')],
    ['a cursor in standard base64 with "/" and "="', base64('scribe:v1:???', 'base64')],
    ['a cursor in standard base64 with "+"', base64('scribe:v1:a>b?c', 'base64')],
    ['a valid cursor with "=" padding added', `${encodeCursor('some-key')}=`],
    ['a valid cursor with a character of another alphabet inside', `${encodeCursor('k')}.`],
    ['a valid cursor with a space before it', ` ${encodeCursor('some-key')}`],
  ];

  it.each(garbage)('refuses %s as BAD_USER_INPUT on "after"', (_, cursor) => {
    const error = refusal(cursor);

    expect(error).toBeInstanceOf(ScribeException);
    expect(error).toMatchObject({
      code: ScribeErrorCode.BadUserInput,
      field: 'after',
      message: 'after: is not a cursor returned by this API',
    });
  });

  it('names the field it is given', () => {
    const error = refusal('garbage!', 'input.before');

    expect(error).toBeInstanceOf(ScribeException);
    expect(error).toMatchObject({
      code: ScribeErrorCode.BadUserInput,
      field: 'input.before',
      message: 'input.before: is not a cursor returned by this API',
    });
  });

  it('accepts exactly what encodeCursor produced', () => {
    expect(refusal(encodeCursor('some-key'))).toBeUndefined();
    expect(decodeCursor(base64('scribe:v1:some-key'))).toBe('some-key');
  });
});
