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
