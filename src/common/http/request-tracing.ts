import { Logger } from '@nestjs/common';
import { type EventEmitter } from 'node:events';
import { type IncomingMessage } from 'node:http';
import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { runWithRequestId } from '../logging/request-context.js';
import { requestIdOf } from './request-id.js';

const REQUEST_ID = 'scribeRequestId';
const OPERATION = 'scribeOperation';

type AccessLogger = Pick<Logger, 'log' | 'debug'>;

/** Where the access lines go, and at which level (`log` with LOG_ACCESS=true, else debug). */
export interface AccessLog {
  readonly atLogLevel: boolean;
  readonly logger?: AccessLogger;
}

/** The id given to a request by requestTracing, else undefined. */
export function requestIdOfResponse(response: Response | undefined): string | undefined {
  return response?.locals?.[REQUEST_ID] as string | undefined;
}

/** Names the GraphQL operation a request ran, for its access line. */
export function noteOperation(response: Response | undefined, name: string): void {
  if (response?.locals) response.locals[OPERATION] = name;
}

/**
 * Runs every listener of `emitter` as part of the request `requestId`. A request's body, a
 * socket's messages, arrive as events of the connection, whose async context is not the
 * request's: without this, what a listener starts (a body parser's next(), a subscription)
 * would log without the id.
 */
export function bindToRequest(emitter: EventEmitter, requestId: string): void {
  const emit = emitter.emit.bind(emitter);
  emitter.emit = (event: string | symbol, ...args: unknown[]) =>
    runWithRequestId(requestId, () => emit(event, ...args));
}

// The most of a path and of an operation name an access line keeps. Both are the client's
// to choose (a GraphQL name has no length limit, a path only the header limit): one request
// must not write kilobytes into the log.
export const ACCESS_PATH_LIMIT = 200;
export const ACCESS_OPERATION_LIMIT = 64;

/** `text` cut to `limit` characters, marked with `…` when cut. */
function bounded(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/**
 * `METHOD /path operation status duration`, the access line of a request (no query string;
 * the path and the operation name bounded).
 */
export function accessLine(
  request: Pick<IncomingMessage, 'method' | 'url'>,
  status: number | 'aborted',
  operation: string | undefined,
  elapsedMs: number,
): string {
  const path = bounded((request.url ?? '/').split('?')[0], ACCESS_PATH_LIMIT);
  const name = operation === undefined ? '-' : bounded(operation, ACCESS_OPERATION_LIMIT);
  return `${request.method ?? '-'} ${path} ${name} ${status} ${elapsedMs.toFixed(1)} ms`;
}

/**
 * First on every request Scribe serves: gives it an id (the caller's `x-request-id` when it is
 * a plain token, else a new one), sends that back as `x-request-id`, runs the rest of its
 * handling as part of it, so that each log line it causes carries the id, and writes its
 * access line when it ends: at debug, or at `log` when LOG_ACCESS=true.
 */
export function requestTracing(
  access: AccessLog,
  now: () => number = () => performance.now(),
): RequestHandler {
  const logger = access.logger ?? new Logger('Access');
  // Nest's logger drops a debug line unless debug is on: the line (its path, its operation,
  // its duration) is then not built at all, on every request.
  const written = () =>
    access.atLogLevel || access.logger !== undefined || Logger.isLevelEnabled('debug');
  return (request: Request, response: Response, next: NextFunction) => {
    const requestId = requestIdOf(request);
    const started = now();
    response.locals[REQUEST_ID] = requestId;
    response.setHeader('x-request-id', requestId);
    bindToRequest(request, requestId);
    response.once('close', () => {
      if (!written()) return;
      const line = accessLine(
        { method: request.method, url: request.originalUrl },
        response.writableFinished ? response.statusCode : 'aborted',
        response.locals[OPERATION] as string | undefined,
        now() - started,
      );
      runWithRequestId(requestId, () =>
        access.atLogLevel ? logger.log(line) : logger.debug(line),
      );
    });
    runWithRequestId(requestId, next);
  };
}
