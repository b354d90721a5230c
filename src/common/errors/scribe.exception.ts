import { ScribeErrorCode } from './scribe-error-code.js';

/**
 * The one exception type that domain code throws for a client-visible failure.
 * Free of GraphQL and HTTP imports; its code is the wire code the API layer answers with.
 */
export class ScribeException extends Error {
  override readonly name = 'ScribeException';

  constructor(
    readonly code: ScribeErrorCode,
    message: string,
    /** The input field at fault, when there is one (`input.sessionId`, `first`, ...). */
    readonly field?: string,
    /**
     * What a caller without the `read` scope is told instead, when this answer would tell it
     * something stored (a revision, whether a session exists, which field a message differs in).
     */
    readonly toNonReaders?: ScribeException,
  ) {
    super(message);
  }

  static invalidInput(field: string, message: string): ScribeException {
    return new ScribeException(ScribeErrorCode.BadUserInput, `${field}: ${message}`, field);
  }
}

/**
 * A ScribeException that the server's state caused rather than what the client sent, whatever
 * its code: it spends no refusal budget (refusesClient). NOT_FOUND for a set-aside entry is
 * one (the entry may have been dropped or re-driven already, by another operator or the drain,
 * and the answer tells a guesser nothing of a session); NOT_FOUND for a session or a message
 * is not.
 */
export class ServerStateException extends ScribeException {}
