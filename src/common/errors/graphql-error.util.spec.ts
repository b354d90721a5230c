import {
  BadRequestException,
  ConsoleLogger,
  ForbiddenException,
  UnauthorizedException,
  InternalServerErrorException,
  Logger,
} from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { CapturingLogger } from '../testing/capturing-logger.js';
import { queryTooComplexError } from '../graphql/query-limits.js';
import { errorKind, formatGraphQLError, originalOf, refusesClient } from './graphql-error.util.js';
import { ScribeErrorCode } from './scribe-error-code.js';
import { ScribeException, ServerStateException } from './scribe.exception.js';
import { ClientClosedRequestError } from '../http/request-abort-signal.js';

const LOCATIONS = [{ line: 1, column: 3 }];

/** An error thrown by a resolver, as graphql-js hands it to Apollo. */
function resolverError(originalError: Error, path: (string | number)[] = ['x']): GraphQLError {
  return new GraphQLError(originalError.message, { originalError, path });
}

/** What Apollo passes to formatError as the formatted error, with the code it assigned. */
function formattedBy(error: GraphQLError, code: string): GraphQLFormattedError {
  const json = error.toJSON();
  return {
    ...json,
    locations: json.locations ?? LOCATIONS,
    extensions: { ...json.extensions, code, stacktrace: ['Apollo', 'stack'] },
  };
}

describe('ScribeErrorCode', () => {
  // The wire: each code as clients read it, written out. A member added, renamed or given
  // another value changes what clients are told, and must change this table with it.
  const WIRE: Record<keyof typeof ScribeErrorCode, string> = {
    BadUserInput: 'BAD_USER_INPUT',
    Unauthenticated: 'UNAUTHENTICATED',
    Forbidden: 'FORBIDDEN',
    QueryTooComplex: 'QUERY_TOO_COMPLEX',
    ResponseSlotTimeout: 'RESPONSE_SLOT_TIMEOUT',
    SessionResolveTimeout: 'SESSION_RESOLVE_TIMEOUT',
    ServiceUnavailable: 'SERVICE_UNAVAILABLE',
    MessageRefused: 'MESSAGE_REFUSED',
    IdempotencyConflict: 'IDEMPOTENCY_CONFLICT',
    NotFound: 'NOT_FOUND',
    MessageHeld: 'MESSAGE_HELD',
    MessageRedacted: 'MESSAGE_REDACTED',
    RevisionConflict: 'REVISION_CONFLICT',
    SlowConsumer: 'SLOW_CONSUMER',
    TooManySubscriptions: 'TOO_MANY_SUBSCRIPTIONS',
    SubscriptionInterrupted: 'SUBSCRIPTION_INTERRUPTED',
    SessionDeleted: 'SESSION_DELETED',
    DatabaseUnavailable: 'DATABASE_UNAVAILABLE',
    JournalUnavailable: 'JOURNAL_UNAVAILABLE',
    BadRequest: 'BAD_REQUEST',
    PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
    UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
    RateLimited: 'RATE_LIMITED',
    RequestTimeout: 'REQUEST_TIMEOUT',
    ClientClosedRequest: 'CLIENT_CLOSED_REQUEST',
    InternalServerError: 'INTERNAL_SERVER_ERROR',
    SpoolDirUnusable: 'SPOOL_DIR_UNUSABLE',
    SpoolOfAnotherDatabase: 'SPOOL_OF_ANOTHER_DATABASE',
  };

  it('is the wire codes themselves, each named once', () => {
    expect(Object.fromEntries(Object.entries(ScribeErrorCode))).toStrictEqual(WIRE);
    expect(new Set(Object.values(ScribeErrorCode)).size).toBe(Object.keys(WIRE).length);
  });

  it.each(Object.values(ScribeErrorCode))('%s reads as a wire code', (code) => {
    expect(code).toMatch(/^[A-Z][A-Z_]+$/);
  });
});

describe(formatGraphQLError.name, () => {
  let logs: CapturingLogger;

  beforeEach(() => {
    logs = new CapturingLogger();
    Logger.overrideLogger(logs);
  });

  afterEach(() => {
    // overrideLogger(true) would switch logging off in Nest 12: put a console logger back.
    Logger.overrideLogger(new ConsoleLogger());
  });

  describe('domain errors', () => {
    it('gives a ScribeException thrown by a resolver its code, message and field', () => {
      const exception = ScribeException.invalidInput('input.sessionId', 'must be 1 to 128 chars');
      const error = resolverError(exception, ['appendMessage']);

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, false);

      expect(result).toStrictEqual({
        locations: LOCATIONS,
        path: ['appendMessage'],
        message: 'input.sessionId: must be 1 to 128 chars',
        extensions: { code: 'BAD_USER_INPUT', field: 'input.sessionId' },
      });
      expect(errorKind(error)).toBe('client');
    });

    it.each(Object.values(ScribeErrorCode))('maps a ScribeException with code %s', (code) => {
      const error = resolverError(new ScribeException(code, `failed with ${code}`));

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, true);

      expect(result.message).toBe(`failed with ${code}`);
      expect(result.extensions).toStrictEqual({ code });
    });

    it('recognises a ScribeException that is not wrapped', () => {
      const exception = new ScribeException(ScribeErrorCode.Unauthenticated, 'admin token needed');

      const result = formatGraphQLError({ message: exception.message }, exception, false);

      expect(result.extensions).toStrictEqual({ code: 'UNAUTHENTICATED' });
      expect(result.message).toBe('admin token needed');
      expect(errorKind(exception)).toBe('unauthenticated');
      expect(errorKind(resolverError(exception))).toBe('unauthenticated');
    });
  });

  describe('request errors', () => {
    it('turns a validation error without a path into BAD_USER_INPUT', () => {
      const error = new GraphQLError('Cannot query field "nope" on type "Query".');

      const result = formatGraphQLError(
        formattedBy(error, 'GRAPHQL_VALIDATION_FAILED'),
        error,
        false,
      );

      expect(result).toStrictEqual({
        locations: LOCATIONS,
        path: undefined,
        message: 'Cannot query field "nope" on type "Query".',
        extensions: { code: 'BAD_USER_INPUT' },
      });
      expect(errorKind(error)).toBe('client');
    });

    it('turns a request error without any code into BAD_USER_INPUT', () => {
      const error = new GraphQLError('Variable "$first" got invalid value "ten".');

      const result = formatGraphQLError({ message: error.message }, error, false);

      expect(result.extensions).toStrictEqual({ code: 'BAD_USER_INPUT' });
    });

    it.each([
      'GRAPHQL_PARSE_FAILED',
      'QUERY_TOO_COMPLEX',
      'BAD_REQUEST',
      'PERSISTED_QUERY_NOT_FOUND',
      'PERSISTED_QUERY_NOT_SUPPORTED',
      'OPERATION_RESOLUTION_FAILURE',
    ])('keeps the request code %s', (code) => {
      const error = new GraphQLError(`failed with ${code}`, { extensions: { code } });

      const result = formatGraphQLError(formattedBy(error, code), error, false);

      expect(result.message).toBe(`failed with ${code}`);
      expect(result.extensions).toStrictEqual({ code });
    });

    it('keeps QUERY_TOO_COMPLEX from the query limits plugin, without its http status', () => {
      const error = queryTooComplexError('Query depth 13 exceeds the limit of 12');

      const result = formatGraphQLError(formattedBy(error, 'QUERY_TOO_COMPLEX'), error, false);

      expect(result).toStrictEqual({
        locations: LOCATIONS,
        path: undefined,
        message: 'Query depth 13 exceeds the limit of 12',
        extensions: { code: 'QUERY_TOO_COMPLEX' },
      });
    });

    it('keeps the code of a validation rule that Apollo reported under its own', () => {
      // Apollo's ValidationError: its own code, the rule's error as originalError.
      const rule = queryTooComplexError('Aliases limit of 30 exceeded, found 31.');
      const error = new GraphQLError(rule.message, {
        originalError: rule,
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      });

      const result = formatGraphQLError(
        formattedBy(error, 'GRAPHQL_VALIDATION_FAILED'),
        error,
        false,
      );

      expect(result.extensions).toStrictEqual({ code: 'QUERY_TOO_COMPLEX' });
      expect(errorKind(error)).toBe('client');
    });

    it("answers graphql-js's token limit as QUERY_TOO_COMPLEX naming MAX_QUERY_TOKENS", () => {
      const error = new GraphQLError(
        'Syntax Error: Document contains more that 5000 tokens. Parsing aborted.',
      );

      const result = formatGraphQLError(formattedBy(error, 'GRAPHQL_PARSE_FAILED'), error, false);

      expect(result.message).toBe('Query document has more than 5000 tokens (MAX_QUERY_TOKENS)');
      expect(result.extensions).toStrictEqual({ code: 'QUERY_TOO_COMPLEX' });
      // Any other syntax error stays one.
      const other = new GraphQLError('Syntax Error: Unexpected Name "x".');
      expect(
        formatGraphQLError(formattedBy(other, 'GRAPHQL_PARSE_FAILED'), other, false),
      ).toMatchObject({ extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
    });

    it('leaves out "Did you mean" suggestions, of fields and enum values alike, outside development', () => {
      for (const message of [
        'Cannot query field "sesion" on type "Query". Did you mean "session" or "sessions"?',
        'Value "USR" does not exist in "MessageRole" enum. Did you mean the enum value "USER"?',
      ]) {
        const error = new GraphQLError(message);
        const formatted = formattedBy(error, 'GRAPHQL_VALIDATION_FAILED');

        expect(formatGraphQLError(formatted, error, false).message).not.toMatch(/Did you mean/);
        expect(formatGraphQLError(formatted, error, false).message).toBe(message.split(' Did')[0]);
        expect(formatGraphQLError(formatted, error, true).message).toBe(message);
      }
    });

    it('turns a client-side HttpException into BAD_REQUEST', () => {
      const exception = new BadRequestException('bad body');
      const error = resolverError(exception);

      const result = formatGraphQLError(formattedBy(error, 'BAD_REQUEST'), error, false);

      expect(result.message).toBe('bad body');
      expect(result.extensions).toStrictEqual({ code: 'BAD_REQUEST' });
      expect(errorKind(error)).toBe('client');
    });

    it.each([
      [new ForbiddenException(), 'FORBIDDEN'],
      [new UnauthorizedException(), 'UNAUTHENTICATED'],
    ])("keeps who may not from a host's guard (%p): %s", (exception, code) => {
      const error = resolverError(exception);

      const result = formatGraphQLError(formattedBy(error, 'FORBIDDEN'), error, false);

      expect(result.message).toBe(exception.message);
      expect(result.extensions).toStrictEqual({ code });
      expect(errorKind(error)).toBe('client');
    });
  });

  it('answers a request whose client went away quietly, without an ERROR line', () => {
    const error = resolverError(new ClientClosedRequestError(), ['session']);

    const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, false);

    expect(result.extensions).toStrictEqual({ code: 'CLIENT_CLOSED_REQUEST' });
    expect(errorKind(error)).toBe('client');
  });

  describe('unexpected errors', () => {
    it('hides an unknown resolver error behind a generic INTERNAL_SERVER_ERROR', () => {
      const failure = new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2');
      const error = resolverError(failure, ['sessions', 0, 'messages']);

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, false);

      expect(result).toStrictEqual({
        locations: LOCATIONS,
        path: ['sessions', 0, 'messages'],
        message: 'Internal server error',
        extensions: { code: 'INTERNAL_SERVER_ERROR' },
      });
      expect(errorKind(error)).toBe('fault');
      expect(JSON.stringify(result)).not.toContain('hunter2');
    });

    it('treats a GraphQLError raised while resolving (it has a path) as unexpected', () => {
      // For example a scalar's serialize() refusing a value the server itself produced.
      const serializeFailure = new GraphQLError('Value is not a valid DateTime: 42');
      const error = resolverError(serializeFailure, ['session', 'createdAt']);

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, false);

      expect(result.message).toBe('Internal server error');
      expect(result.extensions).toStrictEqual({ code: 'INTERNAL_SERVER_ERROR' });
      expect(errorKind(error)).toBe('fault');
    });

    it('treats a server-side HttpException as unexpected', () => {
      const error = resolverError(new InternalServerErrorException('pool exhausted'));

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, false);

      expect(result.message).toBe('Internal server error');
      expect(result.extensions).toStrictEqual({ code: 'INTERNAL_SERVER_ERROR' });
      expect(errorKind(error)).toBe('fault');
    });

    it('shows the message and stack of an unknown error only in development', () => {
      const failure = new Error('database exploded');
      const error = resolverError(failure);

      const result = formatGraphQLError(formattedBy(error, 'INTERNAL_SERVER_ERROR'), error, true);

      expect(result.message).toBe('database exploded');
      expect(result.extensions).toStrictEqual({
        code: 'INTERNAL_SERVER_ERROR',
        stacktrace: failure.stack?.split('\n'),
      });
      expect(result.extensions?.stacktrace).toEqual(
        expect.arrayContaining([expect.stringContaining('graphql-error.util.spec')]),
      );
    });
  });

  describe('refusesClient', () => {
    it.each([
      [ScribeErrorCode.BadUserInput, true],
      [ScribeErrorCode.Unauthenticated, true],
      [ScribeErrorCode.Forbidden, true],
      [ScribeErrorCode.QueryTooComplex, true],
      [ScribeErrorCode.ResponseSlotTimeout, false],
      [ScribeErrorCode.SessionResolveTimeout, false],
      [ScribeErrorCode.ServiceUnavailable, false],
      [ScribeErrorCode.MessageRefused, false],
      [ScribeErrorCode.NotFound, true],
      [ScribeErrorCode.RevisionConflict, true],
      [ScribeErrorCode.IdempotencyConflict, true],
      [ScribeErrorCode.SlowConsumer, false],
    ])('says a ScribeException with code %s refuses the client: %p', (code, expected) => {
      const exception = new ScribeException(code, 'x');
      expect(refusesClient(exception)).toBe(expected);
      expect(refusesClient(resolverError(exception))).toBe(expected);
    });

    it('never counts what the server state caused (a ServerStateException), whatever its code', () => {
      const closed = new ServerStateException(
        ScribeErrorCode.NotFound,
        'no open entry',
        'input.id',
      );
      expect(refusesClient(closed)).toBe(false);
      expect(refusesClient(resolverError(closed))).toBe(false);
      expect(errorKind(resolverError(closed))).toBe('client');
      const error = resolverError(closed);
      expect(formatGraphQLError(formattedBy(error, 'X'), error, false).extensions).toStrictEqual({
        code: 'NOT_FOUND',
        field: 'input.id',
      });
    });

    it('counts request errors and client errors of Nest, never faults or a client gone away', () => {
      expect(refusesClient(new GraphQLError('Cannot query field "nope"'))).toBe(true);
      expect(refusesClient(queryTooComplexError('too deep'))).toBe(true);
      expect(refusesClient(resolverError(new BadRequestException('bad')))).toBe(true);
      expect(refusesClient(resolverError(new Error('boom')))).toBe(false);
      expect(refusesClient(resolverError(new InternalServerErrorException()))).toBe(false);
      expect(refusesClient(resolverError(new ClientClosedRequestError()))).toBe(false);
      const notFound = new GraphQLError('PersistedQueryNotFound', {
        extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
      });
      expect(refusesClient(notFound)).toBe(false);
    });

    it('finds the Scribe error that a refusal before execution carries', () => {
      const forbidden = new ScribeException(ScribeErrorCode.Forbidden, 'Session.title needs read');
      const carried = new GraphQLError(forbidden.message, { originalError: forbidden });
      expect(originalOf(carried)).toBe(forbidden);
      expect(originalOf(resolverError(forbidden))).toBe(forbidden);
      const plain = new GraphQLError('Cannot query field "nope"');
      expect(originalOf(plain)).toBe(plain);
      expect(errorKind(carried)).toBe('unauthenticated');
      expect(formatGraphQLError(carried.toJSON(), carried, false)).toEqual({
        message: 'Session.title needs read',
        extensions: { code: 'FORBIDDEN' },
      });
    });
  });
});
