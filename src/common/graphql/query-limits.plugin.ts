import { type ApolloServerPlugin } from '@apollo/server';
import {
  Kind,
  getVariableValues,
  visit,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import { inputListTooLongError, oversizedInputList } from './input-lists.js';
import {
  MAX_MESSAGES_PER_QUERY,
  MAX_QUERY_DEPTH,
  fullReadsEstimator,
  messagesReadEstimator,
  queryDepth,
  queryTooComplexError,
} from './query-limits.js';
import { operationAlone, scribePart, withoutHostFields, type ScribePart } from './scribe-fields.js';

/**
 * Which operations Scribe's limits bound: 'every' one (Scribe's own endpoint), or only those
 * that select Scribe's fields ('scribe': a host's endpoint, 'host' mode).
 */
export type BoundedOperations = 'every' | 'scribe';

/** The operation a request runs: the named one, or the only one. */
function selectedOperation(
  document: DocumentNode,
  operationName: string | undefined,
): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION,
  );
  if (operationName === undefined) return operations.length === 1 ? operations[0] : undefined;
  return operations.find((definition) => definition.name?.value === operationName);
}

function variablesFit(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
): boolean {
  const operation = selectedOperation(document, operationName);
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

/**
 * Whether variables can change what the document reads: a `first` or `last` that takes one, or an
 * `@include`/`@skip` whose condition does. Only those move the cost; an append's input does not.
 */
function costVaries(document: DocumentNode): boolean {
  let varies = false;
  visit(document, {
    Argument(node) {
      if (node.value.kind !== Kind.VARIABLE) return;
      if (['first', 'last', 'if'].includes(node.name.value)) varies = true;
    },
  });
  return varies;
}

/**
 * Refuses, before anything runs, variables with a list past MAX_INPUT_LIST_ITEMS, and queries
 * that are too deep or could read too much. Apollo
 * hands the same parsed document to every request with the same text, so the verdict on a
 * document whose cost no variable can change is worked out once, from variables that fit.
 * One whose cost they can change (a `first`, an `@include(if: $x)`) is costed for each
 * request's own: a verdict reached with one caller's variables must never answer another's.
 * What is judged depends on who serves the endpoint (`bounded`): on Scribe's own ('every'),
 * every operation, as far as it is not introspection's (withoutHostFields: there are no host
 * fields there); on a host's ('scribe'), an operation that selects Scribe's fields is judged
 * whole, the host's fields in it included, and one that selects none is the host's alone.
 */
export function queryLimitsPlugin(
  maxFullReads: number,
  bounded: BoundedOperations = 'every',
): ApolloServerPlugin {
  const verdicts = new WeakMap<DocumentNode, Map<string | undefined, string | undefined>>();
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ request, document: whole, schema, operation: selected }) => {
          let part: ScribePart | undefined;
          if (bounded === 'scribe') {
            if (!selected || !scribePart(schema, whole, selected)) return Promise.resolve();
            part = { document: operationAlone(whole, selected), operation: selected };
          } else {
            part = selected && withoutHostFields(schema, whole, selected);
            if (selected && !part) return Promise.resolve();
          }
          const document = part?.document ?? whole;
          const operation = part?.operation;
          // Before anything coerces the variables: that is where an oversized list costs.
          const oversized = operation && oversizedInputList(schema, operation, request.variables);
          if (oversized) return Promise.reject(inputListTooLongError(oversized));
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
            if (
              !costVaries(document) &&
              variablesFit(schema, document, request.variables, request.operationName)
            ) {
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
