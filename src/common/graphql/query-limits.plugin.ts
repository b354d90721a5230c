import { type ApolloServerPlugin } from '@apollo/server';
import {
  Kind,
  getVariableValues,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import {
  MAX_MESSAGES_PER_QUERY,
  MAX_QUERY_DEPTH,
  fullReadsEstimator,
  messagesReadEstimator,
  queryDepth,
  queryTooComplexError,
} from './query-limits.js';

function variablesFit(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
): boolean {
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION,
  );
  const operation =
    operationName === undefined
      ? operations.length === 1
        ? operations[0]
        : undefined
      : operations.find((definition) => definition.name?.value === operationName);
  if (!operation) return false;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}, {
    maxErrors: 1,
  });
  return coerced.errors === undefined;
}

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
  // Variables that do not fit the operation are the executor's to refuse (BAD_USER_INPUT); the
  // cost of a request that will not run is nothing.
  if (!variablesFit(schema, document, variables, operationName)) return undefined;
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

/** Whether the operation declares variables: then its cost may differ from request to request. */
function takesVariables(document: DocumentNode, operationName: string | undefined): boolean {
  return document.definitions.some(
    (definition) =>
      definition.kind === Kind.OPERATION_DEFINITION &&
      (operationName === undefined || definition.name?.value === operationName) &&
      (definition.variableDefinitions?.length ?? 0) > 0,
  );
}

/**
 * Refuses, before anything runs, queries that are too deep or could read too much. Apollo
 * hands the same parsed document to every request with the same text, so the verdict on an
 * operation without variables is worked out once. One with variables is costed for each
 * request's own (a `first`, or an `@include(if: $x)`, changes what it reads): a verdict
 * reached with one caller's variables must never answer another's.
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
            if (!takesVariables(document, request.operationName)) {
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
