import { HttpException, Logger } from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { ClientClosedRequestError } from '../http/request-abort-signal.js';
import { ScribeErrorCode } from './scribe-error-code.js';
import { ScribeException } from './scribe.exception.js';

const logger = new Logger('GraphQLErrors');

/** The `extensions.code` a client sees for each domain error code. */
export function graphqlCodeFor(code: ScribeErrorCode): string {
  switch (code) {
    case ScribeErrorCode.InvalidInput:
      return 'BAD_USER_INPUT';
    case ScribeErrorCode.Unauthenticated:
      return 'UNAUTHENTICATED';
    case ScribeErrorCode.QueryTooExpensive:
      return 'QUERY_TOO_EXPENSIVE';
    case ScribeErrorCode.SessionResolveTimeout:
      return 'SESSION_RESOLVE_TIMEOUT';
    case ScribeErrorCode.ShuttingDown:
      return 'SERVICE_UNAVAILABLE';
    case ScribeErrorCode.MessageRefused:
      return 'MESSAGE_REFUSED';
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

/**
 * Apollo's `formatError`: domain errors get their mapped code, request errors keep theirs,
 * anything else becomes a generic INTERNAL_SERVER_ERROR and is logged here instead of shown.
 */
export function formatGraphQLError(
  formatted: GraphQLFormattedError,
  error: unknown,
  development: boolean,
): GraphQLFormattedError {
  const original = unwrapResolverError(error);
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
  if (original instanceof ClientClosedRequestError) {
    // The client is gone; this answer goes nowhere and is not worth an ERROR line.
    return { ...base, message: original.message, extensions: { code: 'CLIENT_CLOSED_REQUEST' } };
  }
  const code = formatted.extensions?.code;
  if (original instanceof GraphQLError && !formatted.path) {
    const clientCode =
      typeof code === 'string' && KEPT_REQUEST_CODES.has(code) ? code : 'BAD_USER_INPUT';
    return { ...base, message: formatted.message, extensions: { code: clientCode } };
  }
  if (original instanceof HttpException && original.getStatus() < 500) {
    return { ...base, message: original.message, extensions: { code: 'BAD_REQUEST' } };
  }
  logger.error(
    `Unhandled error at ${formatted.path?.join('.') ?? 'request'}: ${String(original)}`,
    original instanceof Error ? original.stack : undefined,
  );
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
