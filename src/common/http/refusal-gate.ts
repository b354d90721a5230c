import { Logger } from '@nestjs/common';
import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { LogRateLimit } from '../errors/log-rate-limit.js';
import { RefusalBudget, sourceKey } from './refusal-budget.js';
import { sourceOf } from './source-address.js';

const REFUSED = 'scribeRefused';

/**
 * Marks a request as refused though its HTTP status is 200: a GraphQL answer whose
 * credentials were refused field by field (no token for an admin field, a scope missing).
 */
export function markRefused(request: Request | undefined): void {
  if (request?.res) request.res.locals[REFUSED] = true;
}

/** A refusal the client caused: 4xx, but not the 429 this gate answers itself; or marked. */
const isRefusal = (response: Response) =>
  (response.statusCode >= 400 && response.statusCode < 500 && response.statusCode !== 429) ||
  response.locals[REFUSED] === true;

/**
 * Express middleware, first on /graphql: turns away, unread, the requests of a source whose
 * refusal budget is spent (HTTP 429, RATE_LIMITED, Retry-After, connection closed), and
 * charges the budget for each request of the source that ends refused: answered 4xx, or with
 * its credentials refused (markRefused). The WARN line that a
 * source is being turned away is rate-limited like the other access lines.
 */
export function refusalGate(
  perMinute: number,
  budget = new RefusalBudget(perMinute),
  log = new LogRateLimit(60_000, 10),
  logger: Pick<Logger, 'warn'> = new Logger('Access'),
): RequestHandler {
  if (perMinute === 0) return (_request, _response, next) => next();
  return (request: Request, response: Response, next: NextFunction) => {
    const source = sourceKey(sourceOf(request));
    const wait = budget.retryAfterSeconds(source);
    if (wait > 0) {
      const turn = log.take(source);
      if (turn.write) {
        const held = turn.suppressed > 0 ? ` (${turn.suppressed} more since the last line)` : '';
        logger.warn(
          `Turning away requests from ${source}: more than ${perMinute} refused requests a minute (MAX_REFUSALS_PER_MINUTE)${held}`,
        );
      }
      response.setHeader('Retry-After', String(wait));
      // The body is never read: closing is cheaper than draining it.
      response.setHeader('Connection', 'close');
      response.status(429).json({
        errors: [
          {
            message: `Too many refused requests from this address: more than ${perMinute} a minute (MAX_REFUSALS_PER_MINUTE). Retry after ${wait} s.`,
            extensions: { code: 'RATE_LIMITED' },
          },
        ],
      });
      return;
    }
    // On close, not finish: a client that goes away before its refusal is written has cost
    // the refusing all the same (the status is set before the write fails).
    response.once('close', () => {
      if (isRefusal(response)) budget.charge(source);
    });
    next();
  };
}
