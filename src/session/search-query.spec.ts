import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { MAX_SEARCH_TERMS, parseSearchQuery, searchForm } from './search-query.js';

function refusal(text: string): string {
  try {
    parseSearchQuery(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ScribeException);
    expect((error as ScribeException).code).toBe(ScribeErrorCode.BadUserInput);
    return (error as Error).message;
  }
  throw new Error(`accepted ${text}`);
}

describe('searchForm', () => {
  it('decomposes, drops combining diacritics and lowers case', () => {
    expect(searchForm('Crème')).toBe('creme');
    expect(searchForm('cafe\u0301')).toBe('cafe');
    expect(searchForm('ÅNGSTRÖM')).toBe('angstrom');
    expect(searchForm('\u0301')).toBe('');
    expect(searchForm('北京')).toBe('北京');
    // PostgreSQL lowers Σ to σ wherever it stands; JavaScript to ς at a word's end.
    expect(searchForm('ΟΔΟΣ')).toBe('οδοσ');
    expect(searchForm('οδος')).toBe('οδοσ');
  });

  it('gives SQLite the word as typed, composed (NFC), for its tokenizer to fold', () => {
    // Decomposed, a Hangul syllable is its letters: unicode61 keeps the syllable.
    const korean = parseSearchQuery('한국어');
    expect(korean.expression.fts5).toBe('"한국어"');
    expect(korean.terms[0].words[0]).toBe('한국어'.normalize('NFD'));
    expect(parseSearchQuery('cafe\u0301').expression.fts5).toBe('"café"');
  });
});

describe('parseSearchQuery', () => {
  it('makes every word a quoted term of both databases, all required', () => {
    expect(parseSearchQuery('Quick  brown fox')).toEqual({
      terms: [
        { words: ['quick'], typed: ['Quick'], prefix: false },
        { words: ['brown'], typed: ['brown'], prefix: false },
        { words: ['fox'], typed: ['fox'], prefix: false },
      ],
      expression: {
        fts5: '"Quick" "brown" "fox"',
        tsquery: "'quick' & 'brown' & 'fox'",
      },
    });
  });

  it('takes a quoted phrase as its words in order, and word* as a prefix', () => {
    expect(parseSearchQuery('"Brown  fox" jump*').expression).toEqual({
      fts5: '"Brown fox" "jump"*',
      tsquery: "('brown' <-> 'fox') & 'jump':*",
    });
    expect(parseSearchQuery('"fox"*').expression).toEqual({ fts5: '"fox"', tsquery: "'fox'" });
    expect(parseSearchQuery('"" x').terms).toEqual([{ words: ['x'], typed: ['x'], prefix: false }]);
  });

  it('never lets an operator through: they are words or separators', () => {
    expect(parseSearchQuery('NEAR(a b) OR c AND NOT d').expression.fts5).toBe(
      '"NEAR" "a" "b" "OR" "c" "AND" "NOT" "d"',
    );
    expect(parseSearchQuery("col:x* -y ^z {a} 'q' a&b|c!d<->e").expression).toEqual({
      fts5: '"col" "x"* "y" "z" "a" "q" "a" "b" "c" "d" "e"',
      tsquery: "'col' & 'x':* & 'y' & 'z' & 'a' & 'q' & 'a' & 'b' & 'c' & 'd' & 'e'",
    });
    expect(parseSearchQuery('x * *y').expression.fts5).toBe('"x" "y"');
  });

  it('keeps letters of every script, astral ones too, and their marks', () => {
    expect(parseSearchQuery('𝒻𝑜𝓍 北京 naïve').terms.map((term) => term.words[0])).toEqual([
      '𝒻𝑜𝓍',
      '北京',
      'naive',
    ]);
    expect(parseSearchQuery('🦊 fox').terms).toEqual([
      { words: ['fox'], typed: ['fox'], prefix: false },
    ]);
  });

  it('drops a word of combining marks alone', () => {
    expect(parseSearchQuery('\u0301 a').terms).toEqual([
      { words: ['a'], typed: ['a'], prefix: false },
    ]);
  });

  it('refuses what cannot be searched, saying why', () => {
    expect(refusal('"open')).toBe('query: a quote is not closed');
    expect(refusal('a "b" "c')).toBe('query: a quote is not closed');
    expect(refusal('* - ()')).toBe('query: holds no word to search for');
    expect(refusal('\u0301')).toBe('query: holds no word to search for');
    expect(refusal('')).toBe('query: must be 1 to 200 characters long');
    expect(refusal('x'.repeat(201))).toBe('query: must be 1 to 200 characters long');
    expect(parseSearchQuery('x'.repeat(200)).terms).toHaveLength(1);
    expect(refusal('a\u0000b')).toMatch(/^query: /);
    expect(refusal('a\ud800')).toMatch(/^query: /);
    const many = Array.from({ length: MAX_SEARCH_TERMS + 1 }, (_, i) => `w${i}`);
    expect(refusal(many.join(' '))).toBe(`query: holds more than ${MAX_SEARCH_TERMS} terms`);
    expect(parseSearchQuery(many.slice(1).join(' ')).terms).toHaveLength(MAX_SEARCH_TERMS);
  });
});
