/** Every error a client can be shown. The GraphQL layer maps each to an `extensions.code`. */
export enum ScribeErrorCode {
  InvalidInput = 'INVALID_INPUT',
  Unauthenticated = 'UNAUTHENTICATED',
  Forbidden = 'FORBIDDEN',
  QueryTooExpensive = 'QUERY_TOO_EXPENSIVE',
  /** The answer would pass MAX_RESPONSE_BYTES; clients see QUERY_TOO_COMPLEX, as for any bound. */
  ResponseTooLarge = 'RESPONSE_TOO_LARGE',
  /** A large answer waited too long for one of MAX_LARGE_RESPONSES slots. */
  ResponseSlotTimeout = 'RESPONSE_SLOT_TIMEOUT',
  SessionResolveTimeout = 'SESSION_RESOLVE_TIMEOUT',
  ShuttingDown = 'SHUTTING_DOWN',
  MessageRefused = 'MESSAGE_REFUSED',
  IdempotencyConflict = 'IDEMPOTENCY_CONFLICT',
  SessionNotFound = 'SESSION_NOT_FOUND',
  /** No open entry of the set-aside log has the id given. */
  SetAsideNotFound = 'SET_ASIDE_NOT_FOUND',
  /** No stored message of the session has the id given. */
  MessageNotFound = 'MESSAGE_NOT_FOUND',
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
}
