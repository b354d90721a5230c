import { Logger } from '@nestjs/common';
import { type NestExpressApplication } from '@nestjs/platform-express';
import { json, type NextFunction, type Request, type Response } from 'express';
import { ScribeConfig } from '../../config/scribe-config.js';
import { AuthFailureLog } from '../auth/auth-failure-log.js';
import { describeError } from '../errors/describe-error.js';
import { Authenticator } from '../auth/authenticator.js';
import { jsonBodyProblem, queryTooLarge, type BodyRefusal } from '../validation/json-body.js';
import { bodyDeadline } from './body-deadline.js';
import { credentialsFirst } from './credentials-first.js';
import { serveGraphqlIde } from './graphql-ide.js';
import { answerRefusal, type HttpRefusalCode } from './http-refusal.js';
import { RefusalBudget } from './refusal-budget.js';
import { chargeRefusal, refusalGate } from './refusal-gate.js';
import { applyServerDeadlines } from './server-deadlines.js';

/**
 * Everything a request meets before GraphQL, cheapest first: the server's deadlines for its
 * head, the refusal budget of its source, the caller's credentials (from the head: no byte of
 * the body is read for refused ones), the body's declared size, its deadline, its size and
 * shape (checked on the bytes, before parsing), the query's size; and plain JSON answers (no
 * stack traces) for what is refused on the way. Shared by main.ts and the tests.
 */
export function configureHttp(app: NestExpressApplication): void {
  const config = app.get(ScribeConfig);
  app.set('trust proxy', config.trustProxy);
  // Browsers on the listed origins may call /graphql (a preflight is answered here, before
  // anything else); any other origin gets no CORS headers, so a browser keeps the answer from
  // its page. Bearer tokens travel in a header, so no cookies are ever allowed.
  const corsOrigins = new Set(config.corsOrigins);
  if (corsOrigins.size > 0) {
    app.enableCors({
      origin: [...corsOrigins],
      methods: ['GET', 'POST'],
      allowedHeaders: [
        'authorization',
        'content-type',
        'apollo-require-preflight',
        'x-apollo-operation-name',
      ],
      credentials: false,
      maxAge: 600,
    });
  }
  if (config.development) serveGraphqlIde(app);
  // On every path: a probe of paths that do not exist is refused (404) as much as a bad query.
  app.use(refusalGate(config.maxRefusalsPerMinute, app.get(RefusalBudget)));
  const maxQueryBytes = config.queryLimits.maxBytes;
  // A head cut by the server is charged to the socket's address: not behind a proxy, whose
  // address every client shares.
  const headBudget =
    config.maxRefusalsPerMinute > 0 && config.trustProxy === false
      ? app.get(RefusalBudget)
      : undefined;
  applyServerDeadlines(app.getHttpServer(), config.httpTimeouts, headBudget);
  // Credentials first, from the head alone: refused ones never cost a byte of the body.
  app.use(
    '/graphql',
    credentialsFirst(app.get(Authenticator), app.get(AuthFailureLog), corsOrigins),
  );
  // A body declared too large is refused unread (body-parser would read it all first).
  app.use('/graphql', (request: Request, response: Response, next: NextFunction) => {
    if (Number(request.headers['content-length'] ?? 0) <= config.maxBodyBytes) return next();
    answerRefusal(response, 413, 'PAYLOAD_TOO_LARGE', bodyTooLarge(config.maxBodyBytes), {
      close: true,
    });
  });
  const { bodyTimeoutMs, bodyMinBytesPerSecond } = config.httpTimeouts;
  app.use(
    '/graphql',
    bodyDeadline(config.httpTimeouts, (_request, response) => {
      chargeRefusal(response);
      answerRefusal(
        response,
        408,
        'REQUEST_TIMEOUT',
        `The request body did not arrive in time: it may take BODY_TIMEOUT_MS (${bodyTimeoutMs} ms) and 1 s more per BODY_MIN_BYTES_PER_SECOND (${bodyMinBytesPerSecond}) bytes received`,
        { close: true },
      );
    }),
  );
  // Bodies are read for /graphql only: no other route takes one. express.json itself, not
  // app.useBodyParser: Nest reserves `verify` for its rawBody option.
  app.use(
    '/graphql',
    json({
      limit: config.maxBodyBytes,
      verify: (_request, _response, body, charset) => {
        const refusal =
          charset === 'utf-8'
            ? jsonBodyProblem(body, maxQueryBytes)
            : ({
                code: 'UNSUPPORTED_MEDIA_TYPE',
                message: `JSON request bodies must be UTF-8 (RFC 8259); this one is declared ${charset}`,
              } as const);
        if (refusal) throw new RefusedBody(refusal);
      },
    }),
  );
  // A body nothing reads (any other path, or one the JSON parser skips for its type): its
  // answer closes the connection, or Node would read and discard the body to keep it, with no
  // deadline and no MAX_BODY_BYTES, for as long as a client sends it.
  app.use((request: Request, response: Response, next: NextFunction) => {
    if (hasBody(request) && !request.complete) {
      response.setHeader('Connection', 'close');
    }
    next();
  });
  // The query text is bounded before GraphQL parses it: parsing costs memory and time in
  // proportion to it, whatever the body limit (which must leave room for message content).
  app.use('/graphql', (request: Request, response: Response, next: NextFunction) => {
    const body: unknown = request.body;
    const query =
      request.method === 'GET'
        ? request.query.query
        : typeof body === 'object' && body !== null
          ? (body as { query?: unknown }).query
          : undefined;
    const bytes = typeof query === 'string' ? Buffer.byteLength(query, 'utf8') : 0;
    if (bytes <= maxQueryBytes) return next();
    refuse(response, { code: 'PAYLOAD_TOO_LARGE', message: queryTooLarge(maxQueryBytes) });
  });
  const faults = new Logger('HTTP');
  app.use((error: unknown, request: Request, response: Response, next: NextFunction) => {
    // Already answered in full (a body cut at its deadline, whose read then fails): done.
    if (response.writableEnded) return;
    if (response.headersSent) return next(error);
    if (error instanceof RefusedBody) return refuse(response, error.refusal);
    const given = (error as { status?: number }).status;
    const status = given !== undefined && given >= 400 && given < 600 ? given : 500;
    // The one place a fault that escaped everything else is logged, once, with its stack.
    if (status >= 500) {
      faults.error(
        `Unhandled error answering ${request.method} ${request.path}: ${describeError(error)}`,
        error instanceof Error ? error.stack : undefined,
      );
    }
    const [message, code]: [string, HttpRefusalCode] =
      status === 413
        ? [bodyTooLarge(config.maxBodyBytes), 'PAYLOAD_TOO_LARGE']
        : status === 415
          ? ['JSON request bodies must be UTF-8 (RFC 8259)', 'UNSUPPORTED_MEDIA_TYPE']
          : status < 500
            ? ['Malformed request body', 'BAD_REQUEST']
            : ['Internal server error', 'INTERNAL_SERVER_ERROR'];
    answerRefusal(response, status, code, message);
  });
}

/** A body refused before parsing; body-parser hands it on to the error handler. */
class RefusedBody extends Error {
  readonly status: number;
  constructor(readonly refusal: BodyRefusal) {
    super(refusal.message);
    this.status = STATUS_OF[refusal.code];
  }
}

const STATUS_OF = {
  BAD_USER_INPUT: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
} as const;

function refuse(response: Response, refusal: BodyRefusal): void {
  answerRefusal(response, STATUS_OF[refusal.code], refusal.code, refusal.message);
}

const bodyTooLarge = (maxBodyBytes: number) =>
  `Request body exceeds MAX_BODY_BYTES (${maxBodyBytes} bytes)`;

/** Whether a request carries a body (type-is's test: a length or a transfer coding). */
function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return (
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  );
}
