import { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

/** What of an Express router's layers is read and changed here. */
export interface MountedLayers {
  readonly stack?: {
    route?: unknown;
    rawPath?: unknown;
    handle: RequestHandler;
  }[];
}

/**
 * Keeps the GraphQL server from answering below its path: each handler mounted with
 * `app.use(path)` (not a route) on exactly `path` goes on to the next layer for a request that
 * `isEndpoint` does not take, instead of handling it. Returns how many handlers it wrapped.
 *
 * Why: Nest's Apollo driver mounts Apollo with app.use(path), which answers the whole subtree
 * (/graphql/anything is a GraphQL endpoint too), after every route of the app (at
 * onModuleInit). Scribe's steps stand on its exact path, ahead of any body parser; a request
 * under it that no host route takes would reach Apollo with none of them (a body read by
 * Nest's parser, no credentials first, no deadline). Closed, it gets the app's 404 instead,
 * and Apollo is reached only where Scribe's steps stand. Middleware a host applies through
 * Nest is mounted as routes (app.all), and so left alone.
 */
export function closeGraphqlSubtree(
  router: MountedLayers | undefined,
  path: string,
  isEndpoint: (request: Request) => boolean,
): number {
  let wrapped = 0;
  for (const layer of router?.stack ?? []) {
    const handle = layer.handle;
    // An error handler (four parameters) is left as it is: it answers no request.
    if (layer.route !== undefined || layer.rawPath !== path || handle.length > 3) continue;
    // Three parameters, so that the layer still takes it for a request handler.
    layer.handle = (request: Request, response: Response, next: NextFunction) =>
      isEndpoint(request) ? handle(request, response, next) : next();
    wrapped++;
  }
  return wrapped;
}
