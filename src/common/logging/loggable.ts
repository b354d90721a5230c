/**
 * Characters that must never reach a log line as they are: C0 controls (CR and LF start a
 * forged line, ESC a terminal escape, NUL truncates in some viewers), DEL, C1 controls (0x9B is
 * an 8-bit CSI), the Unicode line and paragraph separators, and lone surrogates (not text: a
 * log shipper would mangle them). Tab is kept: it cannot start a line.
 */
const UNSAFE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const escape = (character: string) => {
  const code = character.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
};

/** `text` as one line of plain characters: every unsafe character written as `\xHH` or `\uHHHH`. */
export function loggable(text: string): string {
  return text.replace(UNSAFE, escape);
}

/**
 * A stack trace keeps its line breaks (it is one entry, read by people), but nothing in it can
 * pass for a line of its own: every line after the first is indented, and every other unsafe
 * character is escaped. An error's message is part of its stack, and it may quote a client.
 */
export function loggableStack(stack: string): string {
  return stack
    .split('\n')
    .map((line, index) => {
      const safe = loggable(line);
      return index === 0 || /^\s/.test(safe) ? safe : `    ${safe}`;
    })
    .join('\n');
}

/** A value a client chose (an id, a name, a header), quoted and escaped for a log line. */
export function quoted(value: unknown): string {
  return `"${loggable(String(value)).replace(/"/g, '\\"')}"`;
}
