import { ScribeErrorCode } from './scribe-error-code.js';

/**
 * The one exception type that domain code throws for a client-visible failure.
 * Free of GraphQL and HTTP imports; the API layer maps the code.
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
    return new ScribeException(ScribeErrorCode.InvalidInput, `${field}: ${message}`, field);
  }
}
