import { HttpException } from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ApolloServerErrorCode, unwrapResolverError } from '@apollo/server/errors';
import { ClientClosedRequestError } from '../http/request-abort-signal.js';
import { AnswerSerialisationError } from '../graphql/answer-serialiser.js';
import { ScribeErrorCode } from './scribe-error-code.js';
import { ScribeException, ServerStateException } from './scribe.exception.js';

// Request-level codes worth keeping as they are; every other error found before anything ran
// (a validation failure, a variable of the wrong type, an unknown field) is BAD_USER_INPUT.
const KEPT_REQUEST_CODES = new Set<string>([
  ApolloServerErrorCode.GRAPHQL_PARSE_FAILED,
  ScribeErrorCode.QueryTooComplex,
  ScribeErrorCode.BadRequest,
  ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND,
  ApolloServerErrorCode.PERSISTED_QUERY_NOT_SUPPORTED,
  ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE,
]);

const SUGGESTION = / ?Did you mean .*\?$/;

// graphql-js's parser, stopped by `parseOptions.maxTokens` ("more that" is its spelling).
const TOKEN_LIMIT = /Document contains more th(?:an|at) (\d+) tokens/;

/** Whether Apollo answers a document stopped by `parseOptions.maxTokens` while parsing. */
export function stoppedByTokenLimit(formatted: GraphQLFormattedError): boolean {
  return (
    formatted.extensions?.code === ApolloServerErrorCode.GRAPHQL_PARSE_FAILED &&
    TOKEN_LIMIT.test(formatted.message)
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
  ScribeErrorCode.BadUserInput,
  // Each tells a caller something of a session (its existence, its revision, whether a
  // message is one it guessed): answered at most MAX_REFUSALS_PER_MINUTE times a minute.
  // (Not a NOT_FOUND the server's state caused: a ServerStateException.)
  ScribeErrorCode.NotFound,
  ScribeErrorCode.MessageHeld,
  ScribeErrorCode.MessageRedacted,
  ScribeErrorCode.RevisionConflict,
  ScribeErrorCode.IdempotencyConflict,
  ScribeErrorCode.Unauthenticated,
  ScribeErrorCode.Forbidden,
  ScribeErrorCode.QueryTooComplex,
]);

/**
 * Whether an error refuses what the client sent: input, credentials or a query it may not
 * run. These spend the source's refusal budget even when the answer is HTTP 200.
 */
export function refusesClient(error: unknown): boolean {
  const original = originalOf(error);
  if (original instanceof ServerStateException) return false;
  if (original instanceof ScribeException) return CLIENTS_DOING.has(original.code);
  // Automatic persisted queries start with a hash the server may not know: the client then
  // sends the query. That is the protocol, not a refusal.
  if (
    error instanceof GraphQLError &&
    error.extensions?.code === ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND
  ) {
    return false;
  }
  return errorKind(error) === 'client' && !(original instanceof ClientClosedRequestError);
}

/**
 * Apollo's `formatError`: domain errors get their code, request errors keep theirs,
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
        code: original.code,
        ...(original.field ? { field: original.field } : {}),
      },
    };
  }
  if (original instanceof AnswerSerialisationError) {
    // Logged already, with the request id the message gives the client.
    return {
      ...base,
      message: original.message,
      extensions: { code: ScribeErrorCode.InternalServerError },
    };
  }
  if (original instanceof ClientClosedRequestError) {
    // The client is gone; this answer goes nowhere and is not worth an ERROR line.
    return {
      ...base,
      message: original.message,
      extensions: { code: ScribeErrorCode.ClientClosedRequest },
    };
  }
  // Apollo reports a validation rule's error under its own code; the rule's own (Scribe's
  // QUERY_TOO_COMPLEX from the alias and directive limits) is kept on the original.
  const inner = original instanceof GraphQLError ? original.originalError : undefined;
  const code =
    inner instanceof GraphQLError && inner.extensions.code !== undefined
      ? inner.extensions.code
      : formatted.extensions?.code;
  const tokens = TOKEN_LIMIT.exec(formatted.message);
  if (code === ApolloServerErrorCode.GRAPHQL_PARSE_FAILED && tokens) {
    return {
      ...base,
      message: `Query document has more than ${tokens[1]} tokens (MAX_QUERY_TOKENS)`,
      extensions: { code: ScribeErrorCode.QueryTooComplex },
    };
  }
  if (original instanceof GraphQLError && !formatted.path) {
    const clientCode =
      typeof code === 'string' && KEPT_REQUEST_CODES.has(code)
        ? code
        : ScribeErrorCode.BadUserInput;
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
        ? ScribeErrorCode.Unauthenticated
        : status === 403
          ? ScribeErrorCode.Forbidden
          : ScribeErrorCode.BadRequest;
    return { ...base, message: original.message, extensions: { code } };
  }
  return {
    ...base,
    message: development && original instanceof Error ? original.message : 'Internal server error',
    extensions: {
      code: ScribeErrorCode.InternalServerError,
      ...(development && original instanceof Error
        ? { stacktrace: original.stack?.split('\n') }
        : {}),
    },
  };
}
