/**
 * Every error code a client can be shown. Each value is the wire code itself: the
 * `extensions.code` of a GraphQL error, of an HTTP refusal's JSON body or of a WebSocket
 * operation's error, written as it is here, with no translation between. Several causes may
 * share one (a session, a message or a set-aside entry not found are all NOT_FOUND); where
 * the server must still tell them apart, it does so by something other than the code (see
 * ServerStateException). The codes Apollo raises itself (GRAPHQL_PARSE_FAILED,
 * PERSISTED_QUERY_NOT_FOUND, ...) are Apollo's: see ApolloServerErrorCode.
 */
export enum ScribeErrorCode {
  // What a domain error (a ScribeException) is answered with.
  BadUserInput = 'BAD_USER_INPUT',
  Unauthenticated = 'UNAUTHENTICATED',
  Forbidden = 'FORBIDDEN',
  /**
   * A document past one of Scribe's bounds (size, tokens, aliases, depth, cost, full reads),
   * or an answer that would pass MAX_RESPONSE_BYTES.
   */
  QueryTooComplex = 'QUERY_TOO_COMPLEX',
  /** A large answer waited too long for one of MAX_LARGE_RESPONSES slots. */
  ResponseSlotTimeout = 'RESPONSE_SLOT_TIMEOUT',
  SessionResolveTimeout = 'SESSION_RESOLVE_TIMEOUT',
  /** The instance is shutting down: retry (on another instance). */
  ServiceUnavailable = 'SERVICE_UNAVAILABLE',
  MessageRefused = 'MESSAGE_REFUSED',
  IdempotencyConflict = 'IDEMPOTENCY_CONFLICT',
  /** No session, no stored message of the session, or no open set-aside entry has the id given. */
  NotFound = 'NOT_FOUND',
  /** The message is held (QUEUED, BUFFERED), not stored yet: it cannot be changed until it is. */
  MessageHeld = 'MESSAGE_HELD',
  /** The message was redacted: it has nothing left to edit. */
  MessageRedacted = 'MESSAGE_REDACTED',
  RevisionConflict = 'REVISION_CONFLICT',
  SlowConsumer = 'SLOW_CONSUMER',
  TooManySubscriptions = 'TOO_MANY_SUBSCRIPTIONS',
  SubscriptionInterrupted = 'SUBSCRIPTION_INTERRUPTED',
  SessionDeleted = 'SESSION_DELETED',
  DatabaseUnavailable = 'DATABASE_UNAVAILABLE',
  JournalUnavailable = 'JOURNAL_UNAVAILABLE',

  // What the HTTP layer answers before GraphQL runs, and the WebSocket before an operation does.
  /** A malformed request, or an operation sent on the wrong transport. */
  BadRequest = 'BAD_REQUEST',
  /** A body past MAX_BODY_BYTES, or a query past MAX_QUERY_BYTES. */
  PayloadTooLarge = 'PAYLOAD_TOO_LARGE',
  /** A body of another media type or charset than the path reads. */
  UnsupportedMediaType = 'UNSUPPORTED_MEDIA_TYPE',
  /** The source address has spent its refusal budget (MAX_REFUSALS_PER_MINUTE). */
  RateLimited = 'RATE_LIMITED',
  /** A request's head or body did not arrive by its deadline. */
  RequestTimeout = 'REQUEST_TIMEOUT',
  /** The client went away before its answer (never read by anyone). */
  ClientClosedRequest = 'CLIENT_CLOSED_REQUEST',
  /** A fault of the server's own; the message says no more. */
  InternalServerError = 'INTERNAL_SERVER_ERROR',

  // What /health shows of the spool (`details.spool.code`) and spoolStatus's `error` starts with.
  /** SPOOL_DIR is not a directory this process can write (a symlink, a file, another owner). */
  SpoolDirUnusable = 'SPOOL_DIR_UNUSABLE',
  /** The spool's database.id names another database than the one connected. */
  SpoolOfAnotherDatabase = 'SPOOL_OF_ANOTHER_DATABASE',
}
