import { type NestExpressApplication } from '@nestjs/platform-express';
import { type NextFunction, type Request, type Response } from 'express';
import { ScribeConfig } from '../../config/scribe-config.js';

/**
 * Body parsing with Scribe's size limit, and plain JSON answers (no stack traces) for the
 * errors the parser raises before a request reaches GraphQL. Shared by main.ts and the tests.
 */
export function configureHttp(app: NestExpressApplication): void {
  const config = app.get(ScribeConfig);
  app.useBodyParser('json', { limit: config.maxBodyBytes });
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
