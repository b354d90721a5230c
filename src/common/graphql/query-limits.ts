import {
  Kind,
  type GraphQLError,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { type ComplexityEstimator } from 'graphql-query-complexity';
import { DEFAULT_PAGE_SIZE } from '../pagination/page.args.js';
import { ScribeRefusal } from './scribe-refusal.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

export const MAX_QUERY_DEPTH = 12;
export const MAX_MESSAGES_PER_QUERY = 100_000;

/** The page size a paged field asks for (`first` or `last`), or undefined for a field that is not paged. */
export function pageSize(
  field: Parameters<ComplexityEstimator>[0]['field'],
  args: Record<string, unknown>,
): number | undefined {
  const paged = field.args.some(
    (argument) => argument.name === 'first' || argument.name === 'last',
  );
  if (!paged) return undefined;
  for (const name of ['first', 'last']) {
    if (typeof args[name] === 'number') return args[name];
  }
  return DEFAULT_PAGE_SIZE;
}

/**
 * Cost = how many messages a query could read: `messages(first: n)` (or `last: n`) reads up to
 * n, and a list with `first` multiplies what each of its items could read.
 */
export const messagesReadEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  const size = pageSize(field, args);
  if (size === undefined) return childComplexity;
  return field.name === 'messages' ? size : size * childComplexity;
};

/**
 * What one `searchMessages` counts as: it may rank every message that matches, in every session
 * (a common word, a short prefix), which costs as much as several transcripts read whole; with
 * the default MAX_FULL_READS_PER_REQUEST (10) a request holds two searches.
 */
export const SEARCH_FULL_READS = 5;

/**
 * Full reads = how many session transcripts a query could load whole: each selection of a
 * session's `messages` is one (whatever its page size: the gate loads the transcript), and a
 * paged list multiplies what each of its items reads by its page size.
 */
export const fullReadsEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  if (field.name === 'messages') return 1;
  if (field.name === 'searchMessages') return SEARCH_FULL_READS;
  const size = pageSize(field, args);
  return size === undefined ? childComplexity : size * childComplexity;
};

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);

/** Depth of the deepest field of any operation, following fragments (each at most once). */
export function queryDepth(document: DocumentNode): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  // Depth below each fragment, computed once: a fragment spread many times (or spreading
  // another twice, and so on) must not be walked once per path.
  const fragmentDepths = new Map<string, number>();
  const depthOf = (selectionSet: SelectionSetNode, visiting: Set<string>): number => {
    let deepest = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        // Introspection is walked by every GraphQL tool and reads only the schema: its depth,
        // bounded by the token limit, does not count.
        if (INTROSPECTION_ROOTS.has(selection.name.value)) continue;
        const below = selection.selectionSet ? depthOf(selection.selectionSet, visiting) : 0;
        deepest = Math.max(deepest, 1 + below);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        deepest = Math.max(deepest, depthOf(selection.selectionSet, visiting));
      } else {
        const name = selection.name.value;
        const known = fragmentDepths.get(name);
        if (known !== undefined) {
          deepest = Math.max(deepest, known);
          continue;
        }
        const fragment = fragments.get(name);
        // A fragment cycle is already a validation error; do not loop on it here.
        if (!fragment || visiting.has(name)) continue;
        visiting.add(name);
        const depth = depthOf(fragment.selectionSet, visiting);
        visiting.delete(name);
        fragmentDepths.set(name, depth);
        deepest = Math.max(deepest, depth);
      }
    }
    return deepest;
  };
  let deepest = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) {
      deepest = Math.max(deepest, depthOf(definition.selectionSet, new Set()));
    }
  }
  return deepest;
}

/** Scribe's refusal of a document past one of its bounds (a ScribeRefusal: Scribe formats it). */
export function queryTooComplexError(message: string): GraphQLError {
  return new ScribeRefusal(message, {
    extensions: { code: ScribeErrorCode.QueryTooComplex, http: { status: 400 } },
  });
}
