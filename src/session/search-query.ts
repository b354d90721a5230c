import { ScribeException } from '../common/errors/scribe.exception.js';
import { boundedTextProblem } from '../common/validation/storable-values.js';
import { type SearchExpression } from '../database/message-search.js';

export const MAX_SEARCH_QUERY_CHARACTERS = 200;
export const MAX_SEARCH_TERMS = 16;

/** One term of a search: a word (a prefix with `*`), or a "quoted phrase" of several. */
export interface SearchTerm {
  /** Its words in searchForm: PostgreSQL's lexemes, and what snippets compare. */
  readonly words: readonly string[];
  /** Its words as typed (NFC), for SQLite's tokenizer to fold as it folds the text. */
  readonly typed: readonly string[];
  readonly prefix: boolean;
}

export interface SearchQuery {
  readonly terms: readonly SearchTerm[];
  readonly expression: SearchExpression;
}

// A word is a run of letters, digits and marks; everything else separates words.
const WORD = /[\p{L}\p{N}\p{M}]+/uy;
const WORDS = /[\p{L}\p{N}\p{M}]+/gu;

/**
 * A word as PostgreSQL's trigger keeps it (see MessageSearch1765152000000): decomposed (NFD),
 * without the combining diacritics U+0300 to U+036F, lower case, a final sigma as σ.
 * SQLite's tokenizer folds the typed word itself: decomposed, a Hangul syllable would be its
 * letters, which unicode61 (keeping the syllable) never finds.
 */
export function searchForm(word: string): string {
  return word
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/ς/g, 'σ');
}

/**
 * A user's search, parsed so that nothing in it reaches either database as an operator: words
 * (all must match), "quoted phrases" (their words in that order), and a `*` right after a word
 * for words that start with it. Anything else (AND, OR, NOT and NEAR as words, parentheses,
 * `-`, `:`, `^`, a `*` alone) is a separator, as punctuation is in the text searched.
 * BAD_USER_INPUT for a query that is empty, longer than MAX_SEARCH_QUERY_CHARACTERS, holds a
 * NUL or a lone surrogate, leaves a quote open, holds more than MAX_SEARCH_TERMS terms, or no
 * word at all.
 */
export function parseSearchQuery(text: string): SearchQuery {
  const problem = boundedTextProblem(text, MAX_SEARCH_QUERY_CHARACTERS);
  if (problem) throw ScribeException.invalidInput('query', problem);
  const terms: SearchTerm[] = [];
  let at = 0;
  while (at < text.length) {
    if (text[at] === '"') {
      const close = text.indexOf('"', at + 1);
      if (close < 0) throw ScribeException.invalidInput('query', 'a quote is not closed');
      const phrase = termOf([...text.slice(at + 1, close).matchAll(WORDS)].map(([word]) => word));
      if (phrase) terms.push({ ...phrase, prefix: false });
      at = close + 1;
      continue;
    }
    WORD.lastIndex = at;
    const word = WORD.exec(text)?.[0];
    if (word === undefined) {
      at += 1;
      continue;
    }
    at += word.length;
    const prefix = text[at] === '*';
    if (prefix) at += 1;
    const term = termOf([word]);
    if (term) terms.push({ ...term, prefix });
  }
  if (terms.length === 0)
    throw ScribeException.invalidInput('query', 'holds no word to search for');
  if (terms.length > MAX_SEARCH_TERMS) {
    throw ScribeException.invalidInput('query', `holds more than ${MAX_SEARCH_TERMS} terms`);
  }
  return { terms, expression: { fts5: fts5Of(terms), tsquery: tsqueryOf(terms) } };
}

/** The words of a term, both ways, without those that are only marks; none: no term. */
function termOf(typed: string[]): { words: string[]; typed: string[] } | undefined {
  const kept = typed.filter((word) => searchForm(word) !== '');
  if (kept.length === 0) return undefined;
  return { words: kept.map(searchForm), typed: kept.map((word) => word.normalize('NFC')) };
}

/** FTS5: each term a quoted string (a phrase when it has several words), `*` after a prefix. */
function fts5Of(terms: readonly SearchTerm[]): string {
  return terms.map((term) => `"${term.typed.join(' ')}"${term.prefix ? '*' : ''}`).join(' ');
}

/** to_tsquery: each word a quoted lexeme, `<->` within a phrase, `:*` for a prefix, `&`. */
function tsqueryOf(terms: readonly SearchTerm[]): string {
  return terms
    .map((term) => {
      const lexemes = term.words.map((word) => `'${word}'`);
      if (term.prefix) return `${lexemes[0]}:*`;
      return lexemes.length === 1 ? lexemes[0] : `(${lexemes.join(' <-> ')})`;
    })
    .join(' & ');
}
