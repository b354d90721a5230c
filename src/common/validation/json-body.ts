import { ScribeErrorCode } from '../errors/scribe-error-code.js';

// Free-form JSON (a message's toolCalls and metadata): object keys in all, and nesting.
export const MAX_JSON_KEYS = 1000;
export const MAX_JSON_DEPTH = 20;

// Objects and arrays one body may hold. Each costs the parser far more than its bytes (a body
// of 16 MiB of `{}` took 3.6 s to parse); 200 for each message of a full 1,000-message batch.
export const MAX_BODY_CONTAINERS = 200_000;
// Keys one body may hold: a full batch of 1,000 messages, each with its fields and free-form
// JSON at its bound (toolCalls and metadata, 1,000 keys each), and room to spare.
export const MAX_BODY_KEYS = 2_100_000;

// How deep a request body may nest: free-form JSON sits at most this many levels inside it
// ({ variables: { input: { messages: [ { metadata: … } ] } } } puts it at the sixth).
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + 10;

/** Why a request body is refused before it is parsed. */
export interface BodyRefusal {
  readonly code:
    | ScribeErrorCode.BadUserInput
    | ScribeErrorCode.PayloadTooLarge
    | ScribeErrorCode.UnsupportedMediaType;
  readonly message: string;
}

/**
 * Why a UTF-8 JSON request body is refused before it is parsed, or undefined: an object with
 * more than MAX_JSON_KEYS keys, more than MAX_BODY_KEYS keys or MAX_BODY_CONTAINERS objects
 * and arrays in all, nesting deeper than MAX_BODY_DEPTH, or a top-level `query` over
 * `maxQueryBytes`. No input Scribe takes has any of these, and parsing one costs far
 * more than refusing it: V8 builds an object of 60,000 keys in ~30 ms, and decodes and parses
 * a 1 MB query in ~2 ms, which the event loop would pay for every such request before any
 * rule could run. One pass over the bytes, stopping at the first excess; strings are skipped
 * with a native search for their closing quote. A body that is not JSON is left to the
 * parser, which says so; so is a query whose size only decoding can tell.
 */
export function jsonBodyProblem(body: Uint8Array, maxQueryBytes: number): BodyRefusal | undefined {
  // Keys seen in each open container, and whether it is an object (arrays count nothing).
  const keys: number[] = [];
  const isObject: boolean[] = [];
  // Where the last top-level string began, and whether the value now due is the query's.
  let topLevelString = -1;
  let queryIsNext = false;
  let containers = 0;
  let allKeys = 0;
  for (let at = 0; at < body.length; at++) {
    const byte = body[at];
    if (byte === QUOTE) {
      const open = at;
      at = closingQuote(body, at);
      if (at < 0) return undefined;
      if (keys.length !== 1) continue;
      // A string no longer than the bound in its raw form cannot decode to more.
      if (
        queryIsNext &&
        at - open - 1 > maxQueryBytes &&
        leastDecodedBytes(body.subarray(open + 1, at)) > maxQueryBytes
      ) {
        return {
          code: ScribeErrorCode.PayloadTooLarge,
          message: queryTooLarge(maxQueryBytes),
        };
      }
      topLevelString = open;
      queryIsNext = false;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (keys.length === MAX_BODY_DEPTH) {
        return {
          code: ScribeErrorCode.BadUserInput,
          message: `Request body is nested more than ${MAX_BODY_DEPTH} levels deep`,
        };
      }
      if (++containers > MAX_BODY_CONTAINERS) {
        return {
          code: ScribeErrorCode.BadUserInput,
          message: `Request body holds more than ${MAX_BODY_CONTAINERS} objects and arrays`,
        };
      }
      keys.push(0);
      isObject.push(byte === OPEN_BRACE);
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      // The top-level value is closed (or was never opened): whatever follows is whitespace,
      // or something the parser refuses at once. Never scan on: a body of many values would
      // reset the counts with each one.
      if (keys.length <= 1) return undefined;
      keys.pop();
      isObject.pop();
    } else if (byte === COLON && isObject[isObject.length - 1]) {
      // Outside strings a colon only ever follows an object's key.
      const count = ++keys[keys.length - 1];
      if (++allKeys > MAX_BODY_KEYS) {
        return {
          code: ScribeErrorCode.BadUserInput,
          message: `Request body holds more than ${MAX_BODY_KEYS} keys in all`,
        };
      }
      if (count > MAX_JSON_KEYS) {
        return {
          code: ScribeErrorCode.BadUserInput,
          message: `Request body holds an object with more than ${MAX_JSON_KEYS} keys; free-form JSON may hold ${MAX_JSON_KEYS} in all`,
        };
      }
      queryIsNext = keys.length === 1 && isQueryKey(body, topLevelString);
    } else if (byte === COMMA) {
      queryIsNext = false;
    }
  }
  return undefined;
}

/** The one message for a query document over MAX_QUERY_BYTES, however it is found. */
export function queryTooLarge(maxQueryBytes: number): string {
  return `Query document exceeds ${maxQueryBytes} bytes (MAX_QUERY_BYTES). Send message data as variables.`;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index of the quote that closes the string opened at `open`, or -1 if none does. */
function closingQuote(body: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = body.indexOf(QUOTE, at + 1);
    if (at < 0) return -1;
    // Escaped when an odd number of backslashes precede it.
    let backslashes = 0;
    while (body[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

const QUERY_KEY = Buffer.from('"query"');

function isQueryKey(body: Uint8Array, open: number): boolean {
  if (open < 0) return false;
  for (let i = 0; i < QUERY_KEY.length; i++) {
    if (body[open + i] !== QUERY_KEY[i]) return false;
  }
  return true;
}

const U = 0x75;

/**
 * The fewest UTF-8 bytes a JSON string's raw text can decode to. Raw bytes count as
 * themselves (invalid UTF-8 only decodes longer); `\X` is one byte, `\uXXXX` one to three, a
 * surrogate half two (a pair is four).
 */
function leastDecodedBytes(text: Uint8Array): number {
  let bytes = text.length;
  for (let at = text.indexOf(BACKSLASH); at >= 0;) {
    if (text[at + 1] !== U) {
      bytes -= 1;
      at = text.indexOf(BACKSLASH, at + 2);
      continue;
    }
    const unit = Number.parseInt(Buffer.from(text.subarray(at + 2, at + 6)).toString('latin1'), 16);
    const decoded = unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
    bytes -= 6 - decoded;
    at = text.indexOf(BACKSLASH, at + 6);
  }
  return bytes;
}
