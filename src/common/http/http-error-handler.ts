import { Logger } from '@nestjs/common';
import { type ErrorRequestHandler, type NextFunction, type Request, type Response } from 'express';
import { describeError } from '../errors/describe-error.js';
import { bodyTooLarge, refuse, RefusedBody } from './body-checks.js';
import { answerRefusal, type HttpRefusalCode } from './http-refusal.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/**
 * Plain JSON answers (no stack traces) for what Scribe's steps refuse or fail on the way to
 * GraphQL: the body parser's errors above all. Mounted on Scribe's paths only, after those
 * steps: a host's errors are its own.
 */
export function httpErrorHandler(
  maxBodyBytes: number,
  faults: Pick<Logger, 'error'> = new Logger('HTTP'),
): ErrorRequestHandler {
  return (error: unknown, request: Request, response: Response, next: NextFunction) => {
    // Already answered in full (a body cut at its deadline, whose read then fails): done.
    if (response.writableEnded) return;
    if (response.headersSent) return next(error);
    if (error instanceof RefusedBody) return refuse(response, error.refusal);
    const given = (error as { status?: number }).status;
    const status = given !== undefined && given >= 400 && given < 600 ? given : 500;
    // The one place a fault that escaped everything else is logged, once, with its stack.
    if (status >= 500) {
      faults.error(
        `Unhandled error answering ${request.method} ${request.originalUrl.split('?')[0]}: ${describeError(error)}`,
        error instanceof Error ? error.stack : undefined,
      );
    }
    const [message, code]: [string, HttpRefusalCode] =
      status === 413
        ? [bodyTooLarge(maxBodyBytes), ScribeErrorCode.PayloadTooLarge]
        : status === 415
          ? ['JSON request bodies must be UTF-8 (RFC 8259)', ScribeErrorCode.UnsupportedMediaType]
          : status < 500
            ? ['Malformed request body', ScribeErrorCode.BadRequest]
            : ['Internal server error', ScribeErrorCode.InternalServerError];
    answerRefusal(response, status, code, message);
  };
}
