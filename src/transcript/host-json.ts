import { ScribeException } from '../common/errors/scribe.exception.js';
import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../common/validation/json-body.js';

// Over GraphQL, free-form JSON (toolCalls, metadata) comes from JSON.parse: plain objects,
// arrays, strings, finite numbers, booleans and null, nothing else. A host calling
// TranscriptService.append passes JavaScript values, which may be anything: a BigInt or a
// cycle (JSON.stringify throws a TypeError deep in the write path), a function, a symbol key or
// an undefined in a list (JSON drops them or writes null: stored other than given), a Date, a
// Map or a class instance (a Map would be stored as {}), a getter or a Proxy that throws.
//
// Only what JSON.parse could have given is taken, so that the same input is stored alike on
// both paths, and the append's answer (which echoes the input) is what a later read returns.
// Non-plain objects are refused rather than converted as JSON.stringify would: that conversion
// loses data without a word (a Map, a Set, a class's getters), and a Date is better sent as the
// string the host wants stored. The copy is what is then checked (checkNewMessages, the same
// rules as GraphQL's: depth, keys, size) and stored: a getter is read once, here. It stops at
// `maxBytes` as it goes, counting the fewest bytes its JSON can take: a list of millions of
// items is refused once that budget is spent, not after it was copied whole.

/**
 * A plain copy of `value`, a message's `field` (`input.messages.0.metadata`), or BAD_USER_INPUT;
 * BAD_USER_INPUT too once its JSON is sure to be over `maxBytes` (MAX_MESSAGE_BYTES).
 */
export function plainJsonCopy(value: unknown, field: string, maxBytes: number): unknown {
  // Absent, as over GraphQL.
  if (value === undefined) return undefined;
  return copy(value, field, { field, maxBytes, bytes: 0, depth: 1, keys: 0, open: new Set() });
}

interface Walk {
  /** The message's field, named by the bounds shared with GraphQL (jsonProblem's wording). */
  readonly field: string;
  readonly maxBytes: number;
  /** The fewest bytes the JSON copied so far takes (a string's length counts as its bytes). */
  bytes: number;
  depth: number;
  keys: number;
  /** The objects and arrays being copied, from the root down to here: a cycle returns to one. */
  readonly open: Set<object>;
}

function copy(value: unknown, path: string, walk: Walk): unknown {
  switch (typeof value) {
    case 'string':
      // Its quotes; a UTF-16 unit is at least one byte of UTF-8.
      spend(walk, value.length + 2);
      return value;
    case 'boolean':
      spend(walk, 4);
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw refuse(path, `is ${value}, which JSON cannot carry`);
      spend(walk, 1);
      return value;
    case 'object':
      if (value === null) {
        spend(walk, 4);
        return null;
      }
      // Its brackets: the opening one here, the closing one as a list's item separators.
      spend(walk, 1);
      return copyContainer(value, path, walk);
    default:
      // bigint, symbol, function, undefined (in a list; an object's is skipped, as JSON does)
      throw refuse(path, `is ${article(typeof value)}, which JSON cannot carry`);
  }
}

function copyContainer(node: object, path: string, walk: Walk): unknown {
  if (walk.depth > MAX_JSON_DEPTH) {
    throw refuse(walk.field, `is nested more than ${MAX_JSON_DEPTH} levels deep`);
  }
  if (walk.open.has(node)) throw refuse(path, 'holds itself (a cycle), which JSON cannot carry');
  const isList = attempt(path, () => Array.isArray(node));
  if (!isList) {
    const prototype = attempt(path, () => Object.getPrototypeOf(node) as object | null);
    // Object.prototype of any realm (a vm context, a worker's message) counts as plain.
    if (prototype !== null && Object.getPrototypeOf(prototype) !== null) {
      throw refuse(
        path,
        `is ${article(kindOf(prototype, path))}, not a plain object: send what JSON.parse gives (a Date as a string)`,
      );
    }
  }
  walk.open.add(node);
  walk.depth += 1;
  try {
    return isList ? copyList(node as unknown[], path, walk) : copyObject(node, path, walk);
  } finally {
    walk.depth -= 1;
    walk.open.delete(node);
  }
}

function copyList(list: unknown[], path: string, walk: Walk): unknown[] {
  const length = attempt(path, () => list.length);
  const copied: unknown[] = [];
  for (let index = 0; index < length; index++) {
    spend(walk, 1);
    const item = attempt(`${path}.${index}`, () => list[index]);
    copied.push(copy(item, `${path}.${index}`, walk));
  }
  return copied;
}

function copyObject(node: object, path: string, walk: Walk): Record<string, unknown> {
  const symbols = attempt(path, () => Object.getOwnPropertySymbols(node));
  if (symbols.length > 0) throw refuse(path, 'has a symbol key, which JSON cannot carry');
  const names = attempt(path, () => Object.keys(node));
  walk.keys += names.length;
  if (walk.keys > MAX_JSON_KEYS) {
    throw refuse(walk.field, `has more than ${MAX_JSON_KEYS} keys in all`);
  }
  const copied: Record<string, unknown> = {};
  for (const name of names) {
    const at = `${path}.${name}`;
    const value = attempt(at, () => (node as Record<string, unknown>)[name]);
    if (value === undefined) continue;
    // "name": and its separator.
    spend(walk, name.length + 4);
    // Defined, not assigned: a key named __proto__ stays a key, as JSON.parse makes it.
    Object.defineProperty(copied, name, {
      value: copy(value, at, walk),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copied;
}

/** `read()`, or BAD_USER_INPUT naming `path` when a getter or a Proxy's trap throws. */
export function attempt<T>(path: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ScribeException) throw error;
    throw refuse(path, `could not be read: ${reasonOf(error)}`);
  }
}

/** Counts `bytes` more of the copy's JSON; BAD_USER_INPUT once they are over the budget. */
function spend(walk: Walk, bytes: number): void {
  walk.bytes += bytes;
  if (walk.bytes > walk.maxBytes) {
    throw refuse(walk.field, `is more than ${walk.maxBytes} bytes as JSON (MAX_MESSAGE_BYTES)`);
  }
}

function refuse(path: string, reason: string): ScribeException {
  return ScribeException.invalidInput(path, reason);
}

function kindOf(prototype: object, path: string): string {
  const constructor = attempt(path, () => (prototype as { constructor?: unknown }).constructor);
  return typeof constructor === 'function' && constructor.name ? constructor.name : 'object';
}

function article(name: string): string {
  if (name === 'undefined') return name;
  return /^[aeiou]/i.test(name) ? `an ${name}` : `a ${name}`;
}

function reasonOf(error: unknown): string {
  // What a host's getter threw may be anything, even something that throws when read: one
  // line of it, never a stack.
  try {
    const text =
      typeof error === 'object' && error !== null && 'message' in error
        ? String(error.message)
        : typeof error === 'symbol'
          ? error.toString()
          : String(error);
    return text.split('\n')[0].slice(0, 200);
  } catch {
    return 'it threw';
  }
}
