/** Client-chosen session ids: 1 to 128 characters of letters, digits and `._:-`. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const SESSION_ID_RULE = '1-128 characters of A-Z a-z 0-9 . _ : -';

/**
 * The ids that start with `prefix`, as one range: `from <= id < to`. Ids are ASCII (the pattern
 * above), compared as bytes, so the first id past every one that starts with `prefix` is
 * `prefix` with its last character moved one up (`u1-` → `u1.`), and a prefix is a range an
 * index on the id reads in order instead of a filter every row is tested against.
 */
export function idPrefixRange(prefix: string): { from: string; to: string } {
  if (!SESSION_ID_PATTERN.test(prefix)) throw new RangeError(`Not a session id prefix: ${prefix}`);
  const last = prefix.charCodeAt(prefix.length - 1);
  return { from: prefix, to: prefix.slice(0, -1) + String.fromCharCode(last + 1) };
}
