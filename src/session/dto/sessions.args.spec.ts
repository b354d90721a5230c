import { MAX_TITLE_FILTER_CHARACTERS, sessionFilterOf } from './sessions.args.js';

describe(sessionFilterOf.name, () => {
  const refusal = (titleContains: string) => {
    try {
      sessionFilterOf({ titleContains });
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('is empty when nothing is asked', () => {
    expect(sessionFilterOf(undefined)).toEqual({});
    expect(sessionFilterOf(null)).toEqual({});
    expect(sessionFilterOf({ updatedSince: null, titleContains: null })).toEqual({});
  });

  it('takes the time as epoch milliseconds and the title text as it is', () => {
    expect(sessionFilterOf({ updatedSince: new Date(1234), titleContains: 'Lisbon' })).toEqual({
      updatedSince: 1234,
      titleContains: 'Lisbon',
    });
  });

  it('counts characters, not UTF-16 units, up to MAX_TITLE_FILTER_CHARACTERS', () => {
    expect(MAX_TITLE_FILTER_CHARACTERS).toBe(200);
    expect(refusal('😀'.repeat(200))).toBeUndefined();
    expect(refusal('x'.repeat(200))).toBeUndefined();
    expect(refusal('x'.repeat(201))).toBe('filter.titleContains: must be 1 to 200 characters long');
    expect(refusal('')).toBe('filter.titleContains: must be 1 to 200 characters long');
  });

  it('refuses NUL and lone surrogates, naming the field', () => {
    expect(refusal('a\u0000')).toBe(
      'filter.titleContains: must not contain the NUL character (U+0000)',
    );
    expect(refusal('\uDC00')).toMatch(/^filter\.titleContains: must be valid Unicode/);
  });
});
