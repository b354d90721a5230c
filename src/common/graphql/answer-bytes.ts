import { getNamedType, isLeafType, type FieldNode } from 'graphql';
import { type ComplexityEstimator } from 'graphql-query-complexity';
import { pageSize } from './query-limits.js';

/** The configured maxima an answer's worst case is made of. */
export interface AnswerBounds {
  /** MAX_PAGE_BYTES: what one page of messages or sessions holds, and one item more. */
  maxPageBytes: number;
  /** MAX_MESSAGE_BYTES: a message's content, a message's or a session's metadata. */
  maxMessageBytes: number;
  /** A session title as JSON, every character escaped at worst. */
  maxTitleBytes: number;
}

// A field's key in the answer, with its quotes, colon and comma.
const KEY_PUNCTUATION = 4;
// An object's braces, a list item's comma.
const OBJECT_PUNCTUATION = 2;
// Ids, cursors, names and the like: none is longer (a cursor is the longest, about 200).
const TEXT_BYTES = 256;
// Numbers, booleans, times and enum values.
const SCALAR_BYTES = 32;

const LARGE_FIELDS = new Set([
  'Session.metadata',
  'Message.content',
  'Message.metadata',
  'Message.toolCalls',
]);

function leafBytes(parent: string, field: string, typeName: string, bounds: AnswerBounds): number {
  const name = `${parent}.${field}`;
  if (LARGE_FIELDS.has(name)) return bounds.maxMessageBytes;
  if (name === 'Session.title') return bounds.maxTitleBytes;
  return typeName === 'String' || typeName === 'ID' || typeName === 'JSON'
    ? TEXT_BYTES
    : SCALAR_BYTES;
}

/**
 * Worst-case bytes of a field's part of the answer, from the configured maxima: a leaf its
 * largest value; a page (`first`/`last`) its page size times an item, but never more than
 * MAX_PAGE_BYTES and one item, as pages are bounded; aliases each count, root fields included.
 * A mutation may answer what it was sent (a message's content): its arguments' bytes are added,
 * and told to `heard` (see MutationWorstCase).
 */
export function answerBytesEstimator(
  bounds: AnswerBounds,
  heard?: (node: FieldNode, argumentBytes: number) => void,
): ComplexityEstimator {
  return ({ type, field, node, args, childComplexity }) => {
    const key = (node.alias ?? node.name).value.length + KEY_PUNCTUATION;
    const named = getNamedType(field.type);
    if (isLeafType(named)) return key + leafBytes(type.name, field.name, named.name, bounds);
    let below = childComplexity + OBJECT_PUNCTUATION;
    const size = pageSize(field, args);
    if (size !== undefined) below = Math.min(size * below, bounds.maxPageBytes + below);
    if (type.name === 'Mutation') {
      const argumentBytes = Buffer.byteLength(JSON.stringify(args), 'utf8');
      heard?.(node, argumentBytes);
      below += argumentBytes;
    }
    return key + below;
  };
}
