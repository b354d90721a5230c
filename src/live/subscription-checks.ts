import { ApolloServerErrorCode } from '@apollo/server/errors';
import {
  GraphQLError,
  OperationTypeNode,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { type Principal } from '../common/auth/authenticator.js';
import { fieldScopeRefusal } from '../common/auth/field-scopes.plugin.js';
import { inputListTooLongError, oversizedInputList } from '../common/graphql/input-lists.js';
import { refusal } from '../common/graphql/query-limits.plugin.js';
import { queryTooComplexError } from '../common/graphql/query-limits.js';
import { type QueryLimitSettings } from '../config/scribe-config.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';

/** What a graphql-ws client sends to subscribe. */
export interface SubscribePayload {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/**
 * The checks a query sent over HTTP passes (Apollo runs them there), for an operation sent
 * over the WebSocket: its token count while it parses, the validation rules (GraphQL's own,
 * GraphQL Armor's aliases and directives, Scribe's repeated fields), input lists, depth and
 * cost, and the scope of every field it selects (for `principal`, the connection's caller). Only
 * subscriptions are taken: a query or a mutation has the HTTP endpoint, with its
 * body limits, refusal budget and error log, and no second way in.
 */
export function checkSubscription(
  schema: GraphQLSchema,
  payload: SubscribePayload,
  limits: QueryLimitSettings,
  validationRules: readonly ValidationRule[],
  principal?: Principal,
): ExecutionArgs | GraphQLError[] {
  if (typeof payload.query !== 'string') {
    return [requestError('The subscription has no query', ScribeErrorCode.BadRequest)];
  }
  if (Buffer.byteLength(payload.query) > limits.maxBytes) {
    return [
      queryTooComplexError(
        `Query document is larger than ${limits.maxBytes} bytes (MAX_QUERY_BYTES)`,
      ),
    ];
  }
  let document: DocumentNode;
  try {
    document = parse(payload.query, { maxTokens: limits.maxTokens });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return [requestError(message, ApolloServerErrorCode.GRAPHQL_PARSE_FAILED)];
  }
  // At most ten errors: a document can name thousands of unknown fields, and the answer to
  // each would cost more than the question.
  let invalid: readonly GraphQLError[];
  try {
    invalid = validate(schema, document, [...specifiedRules, ...validationRules], {
      maxErrors: 10,
    });
  } catch (error) {
    // graphql-js's single-root-field rule throws on a root field under a directive that reads
    // a variable (it collects fields without the variables): graphql-ws would close the whole
    // connection (4500). Refused as the document's fault, as Apollo refuses it over HTTP.
    const message = error instanceof Error ? error.message : String(error);
    return [requestError(message, ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED)];
  }
  if (invalid.length > 0) return [...invalid];
  const operationName = payload.operationName ?? undefined;
  const variables = payload.variables ?? undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation) {
    return [
      requestError('Name the operation to run', ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE),
    ];
  }
  if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
    return [
      requestError(
        `Only subscriptions run over the WebSocket; send a ${operation.operation} with HTTP POST`,
        ScribeErrorCode.BadRequest,
      ),
    ];
  }
  // Every field of every event needs its scope, as over HTTP: checked once, at subscribe.
  const hidden = principal && fieldScopeRefusal(schema, document, operation, principal);
  if (hidden) return [hidden];
  const oversized = oversizedInputList(schema, operation, variables);
  if (oversized) return [inputListTooLongError(oversized)];
  const reason = refusal(schema, document, variables, operationName, limits.maxFullReads);
  if (reason) return [queryTooComplexError(reason)];
  return { schema, document, operationName, variableValues: variables };
}

function requestError(
  message: string,
  code: ScribeErrorCode | ApolloServerErrorCode,
): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}
