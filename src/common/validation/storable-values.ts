import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from './json-body.js';

/**
 * Why a text value cannot be stored as sent, or undefined when it can: NUL (PostgreSQL cannot
 * store U+0000 in text) and lone UTF-16 surrogates (both drivers would store U+FFFD, so two
 * different values could collide, and an answer would echo what was not stored).
 */
export function textProblem(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!value.isWellFormed()) {
    return 'must be valid Unicode: it holds a lone UTF-16 surrogate (U+D800 to U+DFFF)';
  }
  return undefined;
}

/** textProblem, then: 1 to `maxCharacters` characters (code points, as databases count). */
export function boundedTextProblem(value: string, maxCharacters: number): string | undefined {
  return (
    textProblem(value) ??
    (value.length === 0 || [...value].length > maxCharacters
      ? `must be 1 to ${maxCharacters} characters long`
      : undefined)
  );
}

// A number JSON.parse read as Infinity (1e400): stored, it would be written back as null, and
// the same message sent again would differ from what was stored (an idempotency conflict).
const NOT_FINITE = 'holds a number too large for JSON (as 1e400), which would be stored as null';

/**
 * Why free-form JSON is refused, or undefined: more than MAX_JSON_KEYS object keys in all,
 * nested deeper than MAX_JSON_DEPTH, or a number that is not finite. One pass, without
 * recursion, stopping at the first excess.
 */
export function jsonProblem(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : NOT_FINITE;
  // Most messages carry no JSON at all: nothing to walk, nothing to allocate.
  if (typeof value !== 'object' || value === null) return undefined;
  let keys = 0;
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { node, depth } = next;
    if (typeof node === 'number' && !Number.isFinite(node)) return NOT_FINITE;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > MAX_JSON_DEPTH) {
      return `is nested more than ${MAX_JSON_DEPTH} levels deep`;
    }
    if (Array.isArray(node)) {
      for (const item of node as unknown[]) stack.push({ node: item, depth: depth + 1 });
      continue;
    }
    // Object.keys, not for…in: several times faster on objects with very many keys.
    const names = Object.keys(node);
    keys += names.length;
    if (keys > MAX_JSON_KEYS) return `has more than ${MAX_JSON_KEYS} keys in all`;
    for (const name of names) {
      stack.push({ node: (node as Record<string, unknown>)[name], depth: depth + 1 });
    }
  }
  return undefined;
}

/** The UTF-8 bytes of free-form JSON as stored (its text); 0 for none (absent or null). */
export function jsonBytes(value: unknown): number {
  return value === undefined || value === null
    ? 0
    : Buffer.byteLength(JSON.stringify(value), 'utf8');
}
