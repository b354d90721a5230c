import { type ApolloServerPlugin } from '@apollo/server';
import { getComplexity } from 'graphql-query-complexity';
import {
  MAX_MESSAGES_PER_QUERY,
  MAX_QUERY_DEPTH,
  messagesReadEstimator,
  queryDepth,
  queryTooComplexError,
} from './query-limits.js';

/** Refuses, before anything runs, queries that are too deep or could read too much. */
export function queryLimitsPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema }) {
          const depth = queryDepth(document);
          if (depth > MAX_QUERY_DEPTH) {
            throw queryTooComplexError(
              `Query depth ${depth} exceeds the limit of ${MAX_QUERY_DEPTH}`,
            );
          }
          const cost = getComplexity({
            schema,
            query: document,
            variables: request.variables,
            operationName: request.operationName,
            estimators: [messagesReadEstimator],
          });
          if (cost > MAX_MESSAGES_PER_QUERY) {
            throw queryTooComplexError(
              `Query could read ${cost} messages; the limit is ${MAX_MESSAGES_PER_QUERY} per request (lower the \`first\` arguments)`,
            );
          }
        },
      };
    },
  };
}
