import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

/**
 * What a browser client of Scribe sends: its token, JSON, Apollo Server's CSRF headers, and the
 * client-awareness headers Apollo Client sends when given a `name` and `version`.
 */
export const SCRIBE_REQUEST_HEADERS = [
  'authorization',
  'content-type',
  'apollo-require-preflight',
  'x-apollo-operation-name',
  'apollographql-client-name',
  'apollographql-client-version',
] as const;

/**
 * CORS on Scribe's own paths (a host's routes keep whatever CORS the host gives them, so
 * app.enableCors, which covers every path, is not used). What the `cors` package answers for
 * a list of origins, GET and POST, Scribe's headers and `extraHeaders` (CORS_ALLOWED_HEADERS),
 * no credentials and a 10-minute preflight:
 * an origin on the list is reflected, any other gets no Allow-Origin (a browser then keeps the
 * answer from its page), and a preflight is answered here, 204, before anything else. Bearer
 * tokens travel in a header, so no cookies are ever allowed.
 */
export function scribeCors(
  origins: readonly string[],
  extraHeaders: readonly string[] = [],
): RequestHandler {
  const allowed = new Set(origins);
  const allowedHeaders = [...new Set([...SCRIBE_REQUEST_HEADERS, ...extraHeaders])].join(',');
  return (request: Request, response: Response, next: NextFunction) => {
    const origin = request.headers.origin;
    if (origin !== undefined && allowed.has(origin)) {
      response.setHeader('Access-Control-Allow-Origin', origin);
      // An export's file name, and the id its logs carry, for the page to read.
      response.setHeader('Access-Control-Expose-Headers', 'Content-Disposition,X-Request-Id');
    }
    response.vary('Origin');
    if (request.method.toUpperCase() !== 'OPTIONS') return next();
    response.setHeader('Access-Control-Allow-Methods', 'GET,POST');
    response.setHeader('Access-Control-Allow-Headers', allowedHeaders);
    response.setHeader('Access-Control-Max-Age', '600');
    response.statusCode = 204;
    response.setHeader('Content-Length', '0');
    response.end();
  };
}
