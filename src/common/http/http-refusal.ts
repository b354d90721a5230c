import { type Response } from 'express';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { type ScribeException } from '../errors/scribe.exception.js';
import { claimForScribe } from './refusal-gate.js';

/**
 * The codes of what is refused at the HTTP layer, before GraphQL: each is the `extensions.code`
 * of a plain JSON answer.
 */
export type HttpRefusalCode =
  | ScribeErrorCode.BadRequest
  | ScribeErrorCode.BadUserInput
  | ScribeErrorCode.PayloadTooLarge
  | ScribeErrorCode.UnsupportedMediaType
  | ScribeErrorCode.Unauthenticated
  | ScribeErrorCode.RateLimited
  | ScribeErrorCode.RequestTimeout
  | ScribeErrorCode.ServiceUnavailable
  | ScribeErrorCode.InternalServerError;

const errorsBody = (code: ScribeErrorCode, message: string) =>
  JSON.stringify({ errors: [{ message, extensions: { code } }] });

/** The body of every such answer, as GraphQL clients read errors. */
export function refusalBody(code: HttpRefusalCode, message: string): string {
  return errorsBody(code, message);
}

/**
 * Answers a refusal. With `close`, for one decided before the body is read (or while it is):
 * the connection is closed once the answer is written, so the body is never drained (Node
 * would otherwise read all of it to keep the connection), and the client still reads the
 * answer, which goes out before the close.
 */
export function answerRefusal(
  response: Response,
  status: number,
  code: HttpRefusalCode,
  message: string,
  { close = false } = {},
): void {
  // Scribe's own refusal, on a path it shares with a host or not: charged (claimedRefusalsOnly).
  claimForScribe(response);
  if (close) response.setHeader('Connection', 'close');
  response.status(status).type('application/json').send(refusalBody(code, message));
}

/**
 * Answers a domain error (a ScribeException) on a route of Scribe's that is not GraphQL (a
 * transcript's export), in the same shape and with the same code as over GraphQL.
 */
export function answerScribeRefusal(
  response: Response,
  status: number,
  error: ScribeException,
): void {
  claimForScribe(response);
  response.status(status).type('application/json').send(errorsBody(error.code, error.message));
}

/**
 * The HTTP status of a domain error answered on a route of Scribe's that is not GraphQL (a
 * transcript's export or import): 500 for any it does not name, which such a route never
 * answers on purpose.
 */
export function httpStatusFor(code: ScribeErrorCode): number {
  switch (code) {
    case ScribeErrorCode.BadUserInput:
      return 400;
    case ScribeErrorCode.Unauthenticated:
      return 401;
    case ScribeErrorCode.Forbidden:
      return 403;
    case ScribeErrorCode.NotFound:
      return 404;
    case ScribeErrorCode.IdempotencyConflict:
      return 409;
    case ScribeErrorCode.MessageRefused:
      return 422;
    case ScribeErrorCode.DatabaseUnavailable:
    case ScribeErrorCode.JournalUnavailable:
    case ScribeErrorCode.ServiceUnavailable:
      return 503;
    default:
      return 500;
  }
}
