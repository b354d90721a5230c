import { parseSearchQuery } from './search-query.js';
import { SNIPPET_UNITS, snippetOf } from './search-snippet.js';

const marked = (content: string, query: string) => {
  const { text, highlights } = snippetOf(content, parseSearchQuery(query).terms);
  return { text, marks: highlights.map(({ start, length }) => text.slice(start, start + length)) };
};

describe('snippetOf', () => {
  it('marks every matching word of a short message, case and accents aside', () => {
    expect(marked('The Crème and the creme', 'creme')).toEqual({
      text: 'The Crème and the creme',
      marks: ['Crème', 'creme'],
    });
    expect(snippetOf('a fox', parseSearchQuery('fox').terms).highlights).toEqual([
      { start: 2, length: 3 },
    ]);
  });

  it('marks words that start with a prefix term, and the words of a phrase', () => {
    expect(marked('foxes and a fox, not afox', 'fox*').marks).toEqual(['foxes', 'fox']);
    expect(marked('quick brown fox', '"brown fox"').marks).toEqual(['brown', 'fox']);
    // A * after a phrase is a separator: the phrase's words are whole words.
    expect(marked('quick brown fox', '"quick brow"*').marks).toEqual(['quick']);
  });

  it('cuts a long message around its first match, at words, with … where it cut', () => {
    const before = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    const after = Array.from({ length: 80 }, (_, i) => `v${i}`).join(' ');
    const { text, marks } = marked(`${before} needle ${after}`, 'needle');
    expect(text.startsWith('…w')).toBe(true);
    expect(text.endsWith('…')).toBe(true);
    expect(text.length).toBeLessThanOrEqual(SNIPPET_UNITS + 2);
    expect(marks).toEqual(['needle']);
    expect(text.indexOf('needle')).toBeGreaterThan(30);
    expect(text.indexOf('needle')).toBeLessThanOrEqual(41);
    // Whole words only at both ends.
    expect(text.slice(1).split(' ')[0]).toMatch(/^w\d+$/);
    expect(text.slice(0, -1).split(' ').at(-1)).toMatch(/^v\d+$/);
  });

  it('starts at the start when the match is near it', () => {
    expect(marked(`near the start ${'z '.repeat(200)}`, 'start').text.startsWith('near')).toBe(
      true,
    );
  });

  it('shows the start, unmarked, when it finds no match', () => {
    const content = 'x'.repeat(500);
    expect(snippetOf(content, parseSearchQuery('absent').terms)).toEqual({
      text: `${'x'.repeat(SNIPPET_UNITS)}…`,
      highlights: [],
    });
  });

  it('never cuts a surrogate pair in two', () => {
    const content = `needle ${'🦊'.repeat(200)}`;
    const { text } = marked(content, 'needle');
    expect(text.isWellFormed()).toBe(true);
    expect(text.endsWith('…')).toBe(true);
  });
});
