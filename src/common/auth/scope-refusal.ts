import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { type Principal } from './authenticator.js';

/**
 * The refusal of a caller without the scope `what` needs (a root field or a field below it):
 * no credentials is UNAUTHENTICATED (present some); credentials too weak are FORBIDDEN.
 */
export function missingScope(principal: Principal, what: string, scope: string): ScribeException {
  return principal.anonymous
    ? new ScribeException(
        ScribeErrorCode.Unauthenticated,
        `${what} needs Authorization: Bearer <token> with the ${scope} scope`,
      )
    : new ScribeException(
        ScribeErrorCode.Forbidden,
        `${what} needs the ${scope} scope, which this caller lacks`,
      );
}
