import { searchForm, type SearchTerm } from './search-query.js';

/** Where a match is in a snippet, in UTF-16 code units (as JavaScript strings count). */
export interface TextRange {
  start: number;
  length: number;
}

export interface Snippet {
  text: string;
  highlights: TextRange[];
}

/** The most of a message a snippet shows, in UTF-16 code units. */
export const SNIPPET_UNITS = 160;
/** How much text comes before the first match, where there is that much. */
const LEAD_UNITS = 40;
const WORDS = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * The part of a message around its first match, the words that match marked by where they
 * are (ranges, not markup: the text is the message's own, which may hold any characters).
 * Matched as the index matches (see searchForm): a word equal to a term's word, or starting
 * with a prefix term's. Cut at word boundaries, with `…` where text was left out. A message
 * whose match the index found and this does not (its tokenizer splits some scripts otherwise)
 * shows its start, unmarked.
 */
export function snippetOf(content: string, terms: readonly SearchTerm[]): Snippet {
  const words = [...content.matchAll(WORDS)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
    form: searchForm(match[0]),
  }));
  const matches = words.filter((word) => terms.some((term) => matchesTerm(word.form, term)));
  const first = matches[0];
  let start = first ? first.start - LEAD_UNITS : 0;
  // At a word, not inside one: the first that starts in the lead (the match itself at least).
  if (first && start > 0) start = words.find((word) => word.start >= start)?.start ?? first.start;
  start = Math.max(0, start);
  let end = Math.min(content.length, start + SNIPPET_UNITS);
  const cutWord = words.find((word) => word.start < end && word.end > end);
  if (cutWord && cutWord.start > start) end = cutWord.start;
  // Never between the two halves of a surrogate pair.
  if (isLowSurrogate(content.charCodeAt(end))) end -= 1;
  const lead = start > 0 ? '…' : '';
  const text = `${lead}${content.slice(start, end).trimEnd()}${end < content.length ? '…' : ''}`;
  const highlights = matches
    .filter((word) => word.start >= start && word.end <= end)
    .map((word) => ({ start: word.start - start + lead.length, length: word.end - word.start }));
  return { text, highlights };
}

function matchesTerm(form: string, term: SearchTerm): boolean {
  return term.words.some((word, index) =>
    term.prefix && index === term.words.length - 1 ? form.startsWith(word) : form === word,
  );
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
