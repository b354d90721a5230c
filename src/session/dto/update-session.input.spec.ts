import { ScribeException } from '../../common/errors/scribe.exception.js';
import { MAX_TITLE_CHARACTERS, sessionChangesOf } from './update-session.input.js';

describe(sessionChangesOf.name, () => {
  const refusal = (input: Record<string, unknown>, maxBytes = 100) => {
    try {
      sessionChangesOf({ id: 's', ...input }, maxBytes);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(ScribeException);
      return (error as ScribeException).message;
    }
  };

  it('keeps what is given, null included, and leaves out what is not', () => {
    // Strictly: a key left out must not be there as undefined either.
    expect(sessionChangesOf({ id: 's', title: 't' }, 100)).toStrictEqual({ title: 't' });
    expect(sessionChangesOf({ id: 's', metadata: { a: 1 } }, 100)).toStrictEqual({
      metadata: { a: 1 },
    });
    expect(sessionChangesOf({ id: 's', title: null, metadata: null }, 100)).toEqual({
      title: null,
      metadata: null,
    });
  });

  it('refuses an input that changes nothing, and a bad session id', () => {
    expect(refusal({})).toBe('input: must change title, metadata or both');
    expect(refusal({ id: 'a b', title: 't' })).toMatch(/^input\.id: must be /);
  });

  it('counts title characters, not UTF-16 units, up to MAX_TITLE_CHARACTERS', () => {
    expect(MAX_TITLE_CHARACTERS).toBe(512);
    expect(refusal({ title: '😀'.repeat(512) })).toBeUndefined();
    expect(refusal({ title: 'x'.repeat(513) })).toBe(
      'input.title: must be 1 to 512 characters long',
    );
    expect(refusal({ title: '' })).toBe('input.title: must be 1 to 512 characters long');
    expect(refusal({ title: 'a\u0000' })).toMatch(/^input\.title: must not contain the NUL/);
  });

  it('bounds metadata as message metadata is: shape, then bytes as JSON', () => {
    // {"t":"…"} is 8 bytes around the text: 92 of text make exactly 100.
    expect(refusal({ metadata: { t: 'x'.repeat(92) } })).toBeUndefined();
    expect(refusal({ metadata: { t: 'x'.repeat(93) } })).toBe(
      'input.metadata: is more than 100 bytes as JSON (MAX_MESSAGE_BYTES)',
    );
    const deep = JSON.parse('['.repeat(21) + ']'.repeat(21)) as unknown;
    expect(refusal({ metadata: deep }, 10_000)).toMatch(/^input\.metadata: is nested more than/);
  });
});
