import { ScribeException } from '../../common/errors/scribe.exception.js';

/** One line of an NDJSON body: its text (without `\n` or `\r\n`) and its number, from 1. */
export interface NumberedLine {
  text: string;
  line: number;
}

const NEWLINE = 0x0a;
const RETURN = 0x0d;

/**
 * The lines of a byte stream, one at a time, as they arrive: a body of any length is read a
 * line ahead of what its consumer has taken (the stream is paused meanwhile, so a client
 * sending faster than the import stores waits on TCP). Blank lines are skipped but counted.
 * BAD_USER_INPUT naming the line for one longer than `maxLineBytes` (refused as soon as it
 * passes the bound, before the rest of it is read) and for one that is not UTF-8 (whose
 * replacement characters would be imported as the message's text).
 */
export async function* ndjsonLines(
  source: AsyncIterable<Buffer>,
  maxLineBytes: number,
): AsyncGenerator<NumberedLine> {
  // ignoreBOM keeps a byte-order mark as text: a line that starts with one is not JSON.
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let pieces: Buffer[] = [];
  let pending = 0;
  let line = 0;
  const finish = (last: Buffer): NumberedLine | undefined => {
    line += 1;
    let bytes = pieces.length === 0 ? last : Buffer.concat([...pieces, last]);
    pieces = [];
    pending = 0;
    if (bytes.length > 0 && bytes[bytes.length - 1] === RETURN) bytes = bytes.subarray(0, -1);
    if (bytes.length > maxLineBytes) throw tooLong(line, maxLineBytes);
    if (bytes.length === 0) return undefined;
    try {
      return { text: decoder.decode(bytes), line };
    } catch {
      throw ScribeException.invalidInput(`line ${line}`, 'is not UTF-8');
    }
  };
  for await (const chunk of source) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      const found = finish(chunk.subarray(start, end));
      start = end + 1;
      if (found) yield found;
    }
    if (start < chunk.length) {
      pending += chunk.length - start;
      // Plus one for a `\r` that a `\n` may yet follow.
      if (pending > maxLineBytes + 1) throw tooLong(line + 1, maxLineBytes);
      pieces.push(chunk.subarray(start));
    }
  }
  if (pending > 0) {
    const found = finish(Buffer.alloc(0));
    if (found) yield found;
  }
}

function tooLong(line: number, maxLineBytes: number): ScribeException {
  return ScribeException.invalidInput(
    `line ${line}`,
    `is longer than ${maxLineBytes} bytes, more than any message Scribe takes (MAX_MESSAGE_BYTES)`,
  );
}
