import { type ApolloServerPlugin } from '@apollo/server';
import { Kind, visit, type DocumentNode, type GraphQLSchema } from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import {
  MAX_MESSAGES_PER_QUERY,
  MAX_QUERY_DEPTH,
  fullReadsEstimator,
  messagesReadEstimator,
  queryDepth,
  queryTooComplexError,
} from './query-limits.js';

/** Why a query is refused, or undefined when it may run. */
export function refusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
  maxFullReads: number,
): string | undefined {
  const depth = queryDepth(document);
  if (depth > MAX_QUERY_DEPTH) {
    return `Query depth ${depth} exceeds the limit of ${MAX_QUERY_DEPTH}`;
  }
  const measure = (estimator: typeof messagesReadEstimator) =>
    getComplexity({ schema, query: document, variables, operationName, estimators: [estimator] });
  let cost: number;
  let reads: number;
  try {
    cost = measure(messagesReadEstimator);
    reads = measure(fullReadsEstimator);
  } catch (error) {
    // graphql-query-complexity refuses documents past its own node limit by throwing.
    return `Query could not be costed: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (cost > MAX_MESSAGES_PER_QUERY) {
    return `Query could read ${cost} messages; the limit is ${MAX_MESSAGES_PER_QUERY} per request (lower the \`first\` arguments)`;
  }
  if (reads > maxFullReads) {
    return `Query could read the transcripts of ${reads} sessions; the limit is ${maxFullReads} per request (MAX_FULL_READS_PER_REQUEST)`;
  }
  return undefined;
}

/** Whether a `first` argument takes a variable: only then does the cost vary by request. */
function firstTakesVariable(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Argument(node) {
      if (node.name.value === 'first' && node.value.kind === Kind.VARIABLE) found = true;
    },
  });
  return found;
}

/**
 * Refuses, before anything runs, queries that are too deep or could read too much. Apollo
 * hands the same parsed document to every request with the same text, so the verdict on a
 * document whose `first` arguments take no variables is worked out once.
 */
export function queryLimitsPlugin(maxFullReads: number): ApolloServerPlugin {
  const verdicts = new WeakMap<DocumentNode, Map<string | undefined, string | undefined>>();
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ request, document, schema }) => {
          let byOperation = verdicts.get(document);
          let reason = byOperation?.get(request.operationName);
          if (!byOperation?.has(request.operationName)) {
            reason = refusal(
              schema,
              document,
              request.variables,
              request.operationName,
              maxFullReads,
            );
            if (!firstTakesVariable(document)) {
              if (!byOperation)
                verdicts.set(
                  document,
                  (byOperation = new Map<string | undefined, string | undefined>()),
                );
              byOperation.set(request.operationName, reason);
            }
          }
          return reason ? Promise.reject(queryTooComplexError(reason)) : Promise.resolve();
        },
      }),
  };
}
