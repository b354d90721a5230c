import { HttpException, Logger } from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
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
    default: {
      const unhandled: never = code;
      throw new Error(`unmapped error code ${String(unhandled)}`);
    }
  }
}

// Codes that graphql-js and Apollo assign themselves for malformed requests.
const REQUEST_ERROR_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
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
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && REQUEST_ERROR_CODES.has(code)) {
    return { ...base, message: formatted.message, extensions: { code } };
  }
  if (original instanceof HttpException && original.getStatus() < 500) {
    return { ...base, message: original.message, extensions: { code: 'BAD_REQUEST' } };
  }
  if (original instanceof GraphQLError && !original.originalError && typeof code === 'string') {
    return { ...base, message: formatted.message, extensions: { code } };
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
