import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type AuthFailureLog } from '../auth/auth-failure-log.js';
import { type Authenticator } from '../auth/authenticator.js';
import { answerRefusal } from './http-refusal.js';
import { chargeRefusal, credentialsAccepted } from './refusal-gate.js';
import { sourceOf } from './source-address.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/**
 * Express middleware on /graphql, before the body is read: the caller is known from the head
 * alone. Refused credentials cost no body and no GraphQL work (a typed list of 400,000 items
 * in the variables took seconds to check; 60 bodies of 16 MiB, half a minute): they are
 * charged to the source at once, answered 401, and the connection closed unread. The scope
 * each field needs is checked later, by ScopeGuard, on the same outcome. A client that sends
 * `Expect: 100-continue` is asked for its body only once its credentials are accepted.
 */
export function credentialsFirst(
  authenticator: Authenticator,
  refusals: AuthFailureLog,
  corsOrigins: ReadonlySet<string>,
): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    authenticator.forRequest(request).then(
      (outcome) => {
        // A page on another origin never calls anonymously, whatever anonymous callers may do
        // here: a local instance open to anonymous callers must not be open to any web page
        // a browser on the same machine happens to show.
        const reason =
          outcome.kind === 'refused'
            ? outcome.reason
            : outcome.principal.anonymous && corsOrigins.has(request.headers.origin ?? '')
              ? 'Calls from another origin need Authorization: Bearer <token>'
              : undefined;
        if (reason === undefined) {
          credentialsAccepted(response);
          // Only now is a client that waits for it (Expect: 100-continue) asked for its body.
          if (/^100-continue$/i.test(request.headers.expect ?? '')) response.writeContinue();
          return next();
        }
        chargeRefusal(response);
        refusals.refused(sourceOf(request), `${ScribeErrorCode.Unauthenticated}: ${reason}`);
        answerRefusal(response, 401, ScribeErrorCode.Unauthenticated, reason, { close: true });
      },
      (error: unknown) => next(error),
    );
  };
}
