import { type NextFunction, type Request, type Response } from 'express';
import { answerRefusal } from './http-refusal.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/**
 * Express middleware: while `closing()` says the instance is shutting down, a new request is
 * answered 503 with a GraphQL error (`SERVICE_UNAVAILABLE`), unread, and its connection
 * closed, so that the client's next try reaches another instance. Requests that came before
 * go on and finish.
 */
export function whileShuttingDown(closing: () => boolean) {
  return (_request: Request, response: Response, next: NextFunction) => {
    if (!closing()) return next();
    answerRefusal(
      response,
      503,
      ScribeErrorCode.ServiceUnavailable,
      'This Scribe instance is shutting down; retry the request (on another instance)',
      { close: true },
    );
  };
}
