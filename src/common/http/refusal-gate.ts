import { Logger } from '@nestjs/common';
import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { LogRateLimit } from '../errors/log-rate-limit.js';
import { RefusalBudget, sourceKey } from './refusal-budget.js';
import { sourceOf } from './source-address.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

const REFUSED = 'scribeRefused';
const TICKET = 'scribeRefusalTicket';
const SHARED = 'scribeSharedPath';
const CLAIMED = 'scribeClaimed';

/** A request's standing with its source's budget, from the gate to its end. */
interface Ticket {
  readonly source: string;
  readonly budget: RefusalBudget;
  /** reserved: credentials not known yet; accepted: given back; charged: refused already. */
  state: 'reserved' | 'accepted' | 'charged';
  /** Counts the refusal into the metrics, once. */
  readonly counted: (reason: HttpRefusalReason) => void;
}

/** What the gate counts: a request it turned away (429), or one refused and charged. */
export type HttpRefusalReason = 'http_rate_limited' | 'http_refused';

const ticketOf = (response: Response | undefined) => response?.locals[TICKET] as Ticket | undefined;

/** The request's credentials were accepted: its reservation is given back at once. */
export function credentialsAccepted(response: Response): void {
  const ticket = ticketOf(response);
  if (ticket?.state !== 'reserved') return;
  ticket.state = 'accepted';
  ticket.budget.release(ticket.source);
}

/**
 * The request is refused now (its credentials, or a deadline): its source is charged at once,
 * not when the answer has gone, so that the requests arriving meanwhile already see it.
 */
export function chargeRefusal(response: Response): void {
  const ticket = ticketOf(response);
  if (!ticket || ticket.state === 'charged') return;
  if (ticket.state === 'reserved') ticket.budget.release(ticket.source);
  ticket.state = 'charged';
  ticket.budget.charge(ticket.source);
  ticket.counted('http_refused');
}

/**
 * Marks a request as refused though its HTTP status is 200: a GraphQL answer whose
 * credentials were refused field by field (no token for an admin field, a scope missing).
 */
export function markRefused(request: Request | undefined): void {
  if (request?.res) request.res.locals[REFUSED] = true;
}

/**
 * Express middleware for 'host' mode, on the GraphQL path, which is the host's endpoint too:
 * a request there is charged when it ends refused only if Scribe claimed it (claimForScribe),
 * as an operation of Scribe's fields or a refusal of Scribe's own steps. A host's refusal of
 * its own operation (an unknown field, say) is the host's, and spends nothing of Scribe's.
 */
export function claimedRefusalsOnly(_request: Request, response: Response, next: NextFunction) {
  response.locals[SHARED] = true;
  next();
}

/** The request is Scribe's to charge if it ends refused (see claimedRefusalsOnly). */
export function claimForScribe(response: Response | undefined): void {
  if (response) response.locals[CLAIMED] = true;
}

/** A refusal the client caused: 4xx, but not the 429 this gate answers itself; or marked. */
const isRefusal = (response: Response) =>
  (response.locals[SHARED] !== true || response.locals[CLAIMED] === true) &&
  ((response.statusCode >= 400 && response.statusCode < 500 && response.statusCode !== 429) ||
    response.locals[REFUSED] === true);

/**
 * Express middleware, first on every path: turns away, unread, the requests of a source whose
 * refusal budget is spent (HTTP 429, RATE_LIMITED, Retry-After, connection closed). Each
 * request it lets in holds a reservation of the budget until its credentials are accepted
 * (credentialsAccepted) or refused (chargeRefusal, which charges at once); a request that
 * ends refused otherwise (answered 4xx, or markRefused) is charged when it ends. The WARN
 * line that a source is being turned away is rate-limited like the other access lines.
 */
export function refusalGate(
  perMinute: number,
  budget = new RefusalBudget(perMinute),
  log = new LogRateLimit(60_000, 10),
  logger: Pick<Logger, 'warn'> = new Logger('Access'),
  counted: (reason: HttpRefusalReason) => void = () => undefined,
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
      counted('http_rate_limited');
      response.setHeader('Retry-After', String(wait));
      // The body is never read: closing is cheaper than draining it.
      response.setHeader('Connection', 'close');
      response.status(429).json({
        errors: [
          {
            message: `Too many refused requests from this address: more than ${perMinute} a minute (MAX_REFUSALS_PER_MINUTE). Retry after ${wait} s.`,
            extensions: { code: ScribeErrorCode.RateLimited },
          },
        ],
      });
      return;
    }
    budget.reserve(source);
    const ticket: Ticket = { source, budget, state: 'reserved', counted };
    response.locals[TICKET] = ticket;
    // On close, not finish: a client that goes away before its refusal is written has cost
    // the refusing all the same (the status is set before the write fails).
    response.once('close', () => {
      if (isRefusal(response)) chargeRefusal(response);
      else if (ticket.state === 'reserved') budget.release(source);
    });
    next();
  };
}
