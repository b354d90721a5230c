import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type HttpTimeoutSettings } from '../../config/scribe-config.js';

/**
 * Milliseconds left before a body that has been arriving for `elapsedMs`, `receivedBytes` of it
 * so far, is late: it may take `baseMs`, and one second more per `minBytesPerSecond` received
 * (Apache's mod_reqtimeout rule). 0 or less: late. A client that stops sending is cut after
 * the base plus what it sent; one that trickles must keep the rate; and no body lasts longer
 * than the base plus MAX_BODY_BYTES at the minimum rate.
 */
export function bodyTimeLeft(
  elapsedMs: number,
  receivedBytes: number,
  { baseMs, minBytesPerSecond }: { baseMs: number; minBytesPerSecond: number },
): number {
  return baseMs + (receivedBytes * 1000) / minBytesPerSecond - elapsedMs;
}

/** Whether a request declares a body (a length above 0, or chunks). */
export function declaresBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return (
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  );
}

/**
 * Express middleware before the body parser: cuts a body that does not arrive in time (see
 * bodyTimeLeft) by calling `cut`, which answers. One timer per request, re-armed only when it
 * fires on a body that has kept up. What arrived is counted on the socket (the request's own
 * stream cannot be watched without taking it from the parser), from when the head was read.
 */
export function bodyDeadline(
  timeouts: Pick<HttpTimeoutSettings, 'bodyTimeoutMs' | 'bodyMinBytesPerSecond'>,
  cut: (request: Request, response: Response) => void,
  now: () => number = Date.now,
): RequestHandler {
  const rule = {
    baseMs: timeouts.bodyTimeoutMs,
    minBytesPerSecond: timeouts.bodyMinBytesPerSecond,
  };
  return (request: Request, response: Response, next: NextFunction) => {
    if (!declaresBody(request) || request.complete) return next();
    const startedAt = now();
    const readAtStart = request.socket.bytesRead;
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      timer = undefined;
      if (request.complete || response.headersSent) return;
      const left = bodyTimeLeft(now() - startedAt, request.socket.bytesRead - readAtStart, rule);
      if (left > 0) timer = setTimeout(check, Math.ceil(left));
      else cut(request, response);
    };
    timer = setTimeout(check, rule.baseMs);
    const stop = () => clearTimeout(timer);
    request.once('end', stop);
    response.once('close', stop);
    next();
  };
}
