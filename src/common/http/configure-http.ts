import { type NestExpressApplication } from '@nestjs/platform-express';
import { type NextFunction, type Request, type Response } from 'express';
import { ScribeConfig } from '../../config/scribe-config.js';
import { AuthFailureLog } from '../auth/auth-failure-log.js';
import { Authenticator } from '../auth/authenticator.js';
import { sourceOf } from './source-address.js';

/**
 * Body parsing with Scribe's size limit, and plain JSON answers (no stack traces) for the
 * errors the parser raises before a request reaches GraphQL. Shared by main.ts and the tests.
 */
export function configureHttp(app: NestExpressApplication): void {
  const config = app.get(ScribeConfig);
  app.useBodyParser('json', { limit: config.maxBodyBytes });
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
    if (bytes <= config.queryLimits.maxBytes) return next();
    response.status(413).json({
      errors: [
        {
          message: `Query document is ${bytes} bytes; the limit is ${config.queryLimits.maxBytes} (MAX_QUERY_BYTES). Send message data as variables.`,
          extensions: { code: 'PAYLOAD_TOO_LARGE' },
        },
      ],
    });
  });
  // The caller is known before GraphQL parses or checks anything: refused credentials cost no
  // work (a typed list of 400,000 items in the variables took seconds to check). The scope
  // each field needs is checked later, by ScopeGuard, on the same outcome.
  const authenticator = app.get(Authenticator);
  const refusals = app.get(AuthFailureLog);
  app.use('/graphql', (request: Request, response: Response, next: NextFunction) => {
    authenticator.forRequest(request).then(
      (outcome) => {
        if (outcome.kind === 'principal') return next();
        refusals.refused(sourceOf(request), `UNAUTHENTICATED: ${outcome.reason}`);
        response.status(401).json({
          errors: [{ message: outcome.reason, extensions: { code: 'UNAUTHENTICATED' } }],
        });
      },
      (error: unknown) => next(error),
    );
  });
  app.use((error: unknown, _request: Request, response: Response, next: NextFunction) => {
    if (response.headersSent) return next(error);
    const status = (error as { status?: number }).status ?? 500;
    const tooLarge = status === 413;
    response.status(status >= 400 && status < 600 ? status : 500).json({
      errors: [
        {
          message: tooLarge
            ? `Request body exceeds MAX_BODY_BYTES (${config.maxBodyBytes} bytes)`
            : status < 500
              ? 'Malformed request body'
              : 'Internal server error',
          extensions: {
            code: tooLarge
              ? 'PAYLOAD_TOO_LARGE'
              : status < 500
                ? 'BAD_REQUEST'
                : 'INTERNAL_SERVER_ERROR',
          },
        },
      ],
    });
  });
}
