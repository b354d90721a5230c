import { type ApolloServerPlugin } from '@apollo/server';
import { type DocumentNode, type GraphQLSchema } from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import {
  MAX_MESSAGES_PER_QUERY,
  MAX_QUERY_DEPTH,
  messagesReadEstimator,
  queryDepth,
  queryTooComplexError,
} from './query-limits.js';

/** Why a query is refused, or undefined when it may run. */
function refusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
): string | undefined {
  const depth = queryDepth(document);
  if (depth > MAX_QUERY_DEPTH) {
    return `Query depth ${depth} exceeds the limit of ${MAX_QUERY_DEPTH}`;
  }
  const cost = getComplexity({
    schema,
    query: document,
    variables,
    operationName,
    estimators: [messagesReadEstimator],
  });
  if (cost > MAX_MESSAGES_PER_QUERY) {
    return `Query could read ${cost} messages; the limit is ${MAX_MESSAGES_PER_QUERY} per request (lower the \`first\` arguments)`;
  }
  return undefined;
}

/** Refuses, before anything runs, queries that are too deep or could read too much. */
export function queryLimitsPlugin(): ApolloServerPlugin {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ request, document, schema }) => {
          const reason = refusal(schema, document, request.variables, request.operationName);
          return reason ? Promise.reject(queryTooComplexError(reason)) : Promise.resolve();
        },
      }),
  };
}
