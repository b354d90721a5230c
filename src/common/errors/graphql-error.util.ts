import { HttpException } from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { ClientClosedRequestError } from '../http/request-abort-signal.js';
import { AnswerSerialisationError } from '../graphql/answer-serialiser.js';
import { ScribeErrorCode } from './scribe-error-code.js';
import { ScribeException } from './scribe.exception.js';

/** The `extensions.code` a client sees for each domain error code. */
export function graphqlCodeFor(code: ScribeErrorCode): string {
  switch (code) {
    case ScribeErrorCode.InvalidInput:
      return 'BAD_USER_INPUT';
    case ScribeErrorCode.Unauthenticated:
      return 'UNAUTHENTICATED';
    case ScribeErrorCode.Forbidden:
      return 'FORBIDDEN';
    case ScribeErrorCode.QueryTooExpensive:
      return 'QUERY_TOO_EXPENSIVE';
    case ScribeErrorCode.ResponseTooLarge:
      return 'QUERY_TOO_COMPLEX';
    case ScribeErrorCode.ResponseSlotTimeout:
      return 'RESPONSE_SLOT_TIMEOUT';
    case ScribeErrorCode.SessionResolveTimeout:
      return 'SESSION_RESOLVE_TIMEOUT';
    case ScribeErrorCode.ShuttingDown:
      return 'SERVICE_UNAVAILABLE';
    case ScribeErrorCode.MessageRefused:
      return 'MESSAGE_REFUSED';
    case ScribeErrorCode.IdempotencyConflict:
      return 'IDEMPOTENCY_CONFLICT';
    case ScribeErrorCode.SessionNotFound:
    case ScribeErrorCode.SetAsideNotFound:
    case ScribeErrorCode.MessageNotFound:
      return 'NOT_FOUND';
    case ScribeErrorCode.MessageHeld:
      return 'MESSAGE_HELD';
    case ScribeErrorCode.MessageRedacted:
      return 'MESSAGE_REDACTED';
    case ScribeErrorCode.RevisionConflict:
      return 'REVISION_CONFLICT';
    case ScribeErrorCode.SlowConsumer:
      return 'SLOW_CONSUMER';
    case ScribeErrorCode.TooManySubscriptions:
      return 'TOO_MANY_SUBSCRIPTIONS';
    case ScribeErrorCode.SubscriptionInterrupted:
      return 'SUBSCRIPTION_INTERRUPTED';
    case ScribeErrorCode.SessionDeleted:
      return 'SESSION_DELETED';
    case ScribeErrorCode.DatabaseUnavailable:
      return 'DATABASE_UNAVAILABLE';
    case ScribeErrorCode.JournalUnavailable:
      return 'JOURNAL_UNAVAILABLE';
    default: {
      const unhandled: never = code;
      throw new Error(`unmapped error code ${String(unhandled)}`);
    }
  }
}

// Request-level codes worth keeping as they are; every other error found before anything ran
// (a validation failure, a variable of the wrong type, an unknown field) is BAD_USER_INPUT.
const KEPT_REQUEST_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'QUERY_TOO_COMPLEX',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

const SUGGESTION = / ?Did you mean .*\?$/;

// graphql-js's parser, stopped by `parseOptions.maxTokens` ("more that" is its spelling).
const TOKEN_LIMIT = /Document contains more th(?:an|at) (\d+) tokens/;

/** Whether Apollo answers a document stopped by `parseOptions.maxTokens` while parsing. */
export function stoppedByTokenLimit(formatted: GraphQLFormattedError): boolean {
  return (
    formatted.extensions?.code === 'GRAPHQL_PARSE_FAILED' && TOKEN_LIMIT.test(formatted.message)
  );
}

/**
 * What an error is at heart: a resolver's own error, or the Scribe error that a refusal raised
 * before anything ran carries (a GraphQLError without a path, from a plugin).
 */
export function originalOf(error: unknown): unknown {
  const original = unwrapResolverError(error);
  return original instanceof GraphQLError && original.originalError instanceof ScribeException
    ? original.originalError
    : original;
}

/** Who an error is owed to: what the client sent or did, or a fault of the server's own. */
export type ErrorKind = 'client' | 'unauthenticated' | 'fault';

/** The one classification, used for the answer (formatGraphQLError) and the log (errorLogPlugin). */
export function errorKind(error: unknown): ErrorKind {
  const original = originalOf(error);
  if (original instanceof ScribeException) {
    return original.code === ScribeErrorCode.Unauthenticated ||
      original.code === ScribeErrorCode.Forbidden
      ? 'unauthenticated'
      : 'client';
  }
  if (original instanceof ClientClosedRequestError) return 'client';
  // A GraphQL error raised before anything ran (parse, validation, limits) carries no path.
  const located = error instanceof GraphQLError && error.path !== undefined;
  if (original instanceof GraphQLError && !located) return 'client';
  if (original instanceof HttpException && original.getStatus() < 500) return 'client';
  return 'fault';
}

// Domain errors that are the client's doing, as against the server's state (a timeout while
// waiting for a slot, a shutdown, a database that refused a write).
const CLIENTS_DOING = new Set([
  ScribeErrorCode.InvalidInput,
  // Each tells a caller something of a session (its existence, its revision, whether a
  // message is one it guessed): answered at most MAX_REFUSALS_PER_MINUTE times a minute.
  ScribeErrorCode.SessionNotFound,
  ScribeErrorCode.MessageNotFound,
  ScribeErrorCode.MessageHeld,
  ScribeErrorCode.MessageRedacted,
  ScribeErrorCode.RevisionConflict,
  ScribeErrorCode.IdempotencyConflict,
  ScribeErrorCode.Unauthenticated,
  ScribeErrorCode.Forbidden,
  ScribeErrorCode.QueryTooExpensive,
  ScribeErrorCode.ResponseTooLarge,
]);

/**
 * Whether an error refuses what the client sent: input, credentials or a query it may not
 * run. These spend the source's refusal budget even when the answer is HTTP 200.
 */
export function refusesClient(error: unknown): boolean {
  const original = originalOf(error);
  if (original instanceof ScribeException) return CLIENTS_DOING.has(original.code);
  // Automatic persisted queries start with a hash the server may not know: the client then
  // sends the query. That is the protocol, not a refusal.
  if (error instanceof GraphQLError && error.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND') {
    return false;
  }
  return errorKind(error) === 'client' && !(original instanceof ClientClosedRequestError);
}

/**
 * Apollo's `formatError`: domain errors get their mapped code, request errors keep theirs,
 * anything else becomes a generic INTERNAL_SERVER_ERROR (logged once, by errorLogPlugin).
 */
export function formatGraphQLError(
  formatted: GraphQLFormattedError,
  error: unknown,
  development: boolean,
): GraphQLFormattedError {
  const original = originalOf(error);
  const base = { locations: formatted.locations, path: formatted.path };
  if (original instanceof ScribeException) {
    return {
      ...base,
      message: original.message,
      extensions: {
        code: graphqlCodeFor(original.code),
        ...(original.field ? { field: original.field } : {}),
      },
    };
  }
  if (original instanceof AnswerSerialisationError) {
    // Logged already, with the request id the message gives the client.
    return { ...base, message: original.message, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  }
  if (original instanceof ClientClosedRequestError) {
    // The client is gone; this answer goes nowhere and is not worth an ERROR line.
    return { ...base, message: original.message, extensions: { code: 'CLIENT_CLOSED_REQUEST' } };
  }
  // Apollo reports a validation rule's error under its own code; the rule's own (Scribe's
  // QUERY_TOO_COMPLEX from the alias and directive limits) is kept on the original.
  const inner = original instanceof GraphQLError ? original.originalError : undefined;
  const code =
    inner instanceof GraphQLError && inner.extensions.code !== undefined
      ? inner.extensions.code
      : formatted.extensions?.code;
  const tokens = TOKEN_LIMIT.exec(formatted.message);
  if (code === 'GRAPHQL_PARSE_FAILED' && tokens) {
    return {
      ...base,
      message: `Query document has more than ${tokens[1]} tokens (MAX_QUERY_TOKENS)`,
      extensions: { code: 'QUERY_TOO_COMPLEX' },
    };
  }
  if (original instanceof GraphQLError && !formatted.path) {
    const clientCode =
      typeof code === 'string' && KEPT_REQUEST_CODES.has(code) ? code : 'BAD_USER_INPUT';
    // graphql-js suggests fields, arguments, types and enum values ("Did you mean …?"): in
    // production that names what introspection may not show.
    const message = development ? formatted.message : formatted.message.replace(SUGGESTION, '');
    return { ...base, message, extensions: { code: clientCode } };
  }
  if (original instanceof HttpException && original.getStatus() < 500) {
    // A host's guard (an APP_GUARD of its own) refusing one of Scribe's fields says who may
    // not, as Scribe's own refusals do.
    const status = original.getStatus();
    const code =
      status === 401
        ? graphqlCodeFor(ScribeErrorCode.Unauthenticated)
        : status === 403
          ? graphqlCodeFor(ScribeErrorCode.Forbidden)
          : 'BAD_REQUEST';
    return { ...base, message: original.message, extensions: { code } };
  }
  return {
    ...base,
    message: development && original instanceof Error ? original.message : 'Internal server error',
    extensions: {
      code: 'INTERNAL_SERVER_ERROR',
      ...(development && original instanceof Error
        ? { stacktrace: original.stack?.split('\n') }
        : {}),
    },
  };
}
