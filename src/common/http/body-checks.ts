import { json, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { type HttpTimeoutSettings } from '../../config/scribe-config.js';
import { jsonBodyProblem, queryTooLarge, type BodyRefusal } from '../validation/json-body.js';
import { bodyDeadline } from './body-deadline.js';
import { answerRefusal } from './http-refusal.js';
import { chargeRefusal } from './refusal-gate.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/** A body refused before parsing; body-parser hands it on to the error handler. */
export class RefusedBody extends Error {
  readonly status: number;
  constructor(readonly refusal: BodyRefusal) {
    super(refusal.message);
    this.status = STATUS_OF[refusal.code];
  }
}

const STATUS_OF: Record<BodyRefusal['code'], number> = {
  [ScribeErrorCode.BadUserInput]: 400,
  [ScribeErrorCode.PayloadTooLarge]: 413,
  [ScribeErrorCode.UnsupportedMediaType]: 415,
};

export function refuse(response: Response, refusal: BodyRefusal): void {
  answerRefusal(response, STATUS_OF[refusal.code], refusal.code, refusal.message);
}

export const bodyTooLarge = (maxBodyBytes: number) =>
  `Request body exceeds MAX_BODY_BYTES (${maxBodyBytes} bytes)`;

/** A body declared too large is refused unread (body-parser would read it all first). */
export function declaredSizeCheck(maxBodyBytes: number): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    if (Number(request.headers['content-length'] ?? 0) <= maxBodyBytes) return next();
    answerRefusal(response, 413, ScribeErrorCode.PayloadTooLarge, bodyTooLarge(maxBodyBytes), {
      close: true,
    });
  };
}

/**
 * A body on the GraphQL path is JSON (`application/json`, as express.json reads it) or is
 * refused unread, 415. Why: the JSON parser skips any other type, and the next parser in the
 * app (Nest's urlencoded one, unless the host turned them off) would read it instead, with its
 * own limits and none of Scribe's checks, and Apollo, which takes whatever body it is handed,
 * would run it (form bodies pass Apollo's CSRF check with any non-simple header). GraphQL over
 * HTTP sends JSON only; `application/*+json` is left out too: no parser of the app reads it.
 */
export const jsonBodiesOnly = bodiesOfType(
  'application/json',
  'GraphQL request bodies must be JSON (Content-Type: application/json)',
);

/** The media type of a transcript's import: NDJSON, as its export (format=jsonl) writes it. */
export const NDJSON = 'application/x-ndjson';

/**
 * An import's body is NDJSON, or is refused unread (415), before any parser of the app can
 * read it: Nest's JSON parser would read an `application/json` one whole, with its own limit
 * and errors, and the import would find nothing left to read.
 */
export const ndjsonBodiesOnly = bodiesOfType(
  NDJSON,
  `An import's body is NDJSON (Content-Type: ${NDJSON}), as GET /sessions/{id}/export?format=jsonl writes it`,
);

/** A body of media type `type` (any parameters, any case) goes on; another is refused unread. */
function bodiesOfType(type: string, refusal: string): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    const declared = request.headers['content-type']?.split(';', 1)[0].trim().toLowerCase();
    if (!hasBody(request) || declared === type) return next();
    answerRefusal(response, 415, ScribeErrorCode.UnsupportedMediaType, refusal, { close: true });
  };
}

/** The body's deadline (bodyDeadline), answered 408 and charged to the source. */
export function scribeBodyDeadline(timeouts: HttpTimeoutSettings): RequestHandler {
  const { bodyTimeoutMs, bodyMinBytesPerSecond } = timeouts;
  return bodyDeadline(timeouts, (_request, response) => {
    chargeRefusal(response);
    answerRefusal(
      response,
      408,
      ScribeErrorCode.RequestTimeout,
      `The request body did not arrive in time: it may take BODY_TIMEOUT_MS (${bodyTimeoutMs} ms) and 1 s more per BODY_MIN_BYTES_PER_SECOND (${bodyMinBytesPerSecond}) bytes received`,
      { close: true },
    );
  });
}

/**
 * The JSON body, its size and shape checked on the bytes before parsing. express.json itself,
 * not app.useBodyParser: Nest reserves `verify` for its rawBody option. Once it has read a
 * body, a parser Nest registers after it skips the request (body-parser: "already parsed").
 */
export function scribeJsonBody(maxBodyBytes: number, maxQueryBytes: number): RequestHandler {
  const parse = json({
    limit: maxBodyBytes,
    verify: (_request, _response, body, charset) => {
      const refusal: BodyRefusal | undefined =
        charset === 'utf-8'
          ? jsonBodyProblem(body, maxQueryBytes)
          : {
              code: ScribeErrorCode.UnsupportedMediaType,
              message: `JSON request bodies must be UTF-8 (RFC 8259); this one is declared ${charset}`,
            };
      if (refusal) throw new RefusedBody(refusal);
    },
  });
  // Not under body-parser's own name, `jsonParser`: Nest would take it for its own parser and
  // leave the host's routes with none (NestApplication.registerParserMiddleware).
  return (request, response, next) => parse(request, response, next);
}

/**
 * The query text is bounded before GraphQL parses it: parsing costs memory and time in
 * proportion to it, whatever the body limit (which must leave room for message content).
 */
export function queryBound(maxQueryBytes: number): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    const body: unknown = request.body;
    const query =
      request.method === 'GET'
        ? request.query.query
        : typeof body === 'object' && body !== null
          ? (body as { query?: unknown }).query
          : undefined;
    const bytes = typeof query === 'string' ? Buffer.byteLength(query, 'utf8') : 0;
    if (bytes <= maxQueryBytes) return next();
    refuse(response, {
      code: ScribeErrorCode.PayloadTooLarge,
      message: queryTooLarge(maxQueryBytes),
    });
  };
}

/**
 * A body nothing reads (another path, or one the JSON parser skips for its type): its answer
 * closes the connection, or Node would read and discard the body to keep it, with no deadline
 * and no MAX_BODY_BYTES, for as long as a client sends it.
 */
export function closeUnreadBodies(request: Request, response: Response, next: NextFunction): void {
  if (hasBody(request) && !request.complete) response.setHeader('Connection', 'close');
  next();
}

/** Whether a request carries a body (type-is's test: a length or a transfer coding). */
function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return (
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  );
}
