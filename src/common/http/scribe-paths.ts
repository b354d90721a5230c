import {
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { type ScribeConfig } from '../../config/scribe-config.js';

/**
 * Which of Scribe's routes a request is for: its GraphQL endpoint, /health (with /health/live
 * and /health/ready), /metrics, a transcript's export (/sessions/<id>/export) or import
 * (/sessions/<id>/import), or none.
 */
export type ScribeRoute = 'graphql' | ControllerRoute | undefined;

/** Scribe's Nest routes (HealthController, MetricsController, ExportController, ImportController). */
export type ControllerRoute = 'health' | 'metrics' | 'export' | 'import';

/** What of an Express router is read here: its settings. */
export interface RouterView {
  readonly caseSensitive?: boolean;
  readonly strict?: boolean;
}

const escape = (path: string) => path.replace(/[.\\^$*+?()[\]{}|]/g, '\\$&');

// A route parameter (`:id`), as Express matches it: one path segment, whatever it holds (the
// controller checks it). Applied to an escaped path, which leaves `:` and word characters be.
const parameters = (escaped: string) => escaped.replace(/:[A-Za-z_]\w*/g, '[^/]+');

/** The controller path and the method paths of each of Scribe's Nest routes. */
export const CONTROLLER_ROUTES: Record<
  ControllerRoute,
  { readonly controller: string; readonly methods: readonly string[] }
> = {
  health: { controller: 'health', methods: ['/', '/live', '/ready'] },
  metrics: { controller: 'metrics', methods: ['/'] },
  export: { controller: 'sessions', methods: [':id/export'] },
  import: { controller: 'sessions', methods: [':id/import'] },
};

/**
 * Where Scribe's HTTP steps apply: Scribe's own routes, each matched as Express matches it, and
 * nothing else of the app. /health, /metrics and /sessions/<id>/export are Nest routes: the
 * path Nest serves each at (under the host's global prefix, if any; an `:id` is any one
 * segment), and with a trailing slash unless 'strict routing' is on. The GraphQL endpoint is
 * the path and the path with a trailing slash, both of which reach Apollo's `app.use(path)`;
 * the paths under it are not Scribe's (closeGraphqlSubtree keeps Apollo from answering them).
 * Case-insensitive unless the router is case sensitive ('case sensitive routing'), as Express's
 * own matching. With guardAllPaths (standalone), the refusal gate stands on every path.
 */
export class ScribePaths {
  private readonly routes = new WeakMap<Request, ScribeRoute>();
  private patterns?: Record<ControllerRoute | 'graphql', RegExp>;

  constructor(
    private readonly config: Pick<ScribeConfig, 'graphqlPath' | 'guardAllPaths'>,
    /** The app's router, read at request time (the settings and routes it has by then). */
    private readonly router: () => RouterView | undefined,
    /**
     * Where Nest serves a route of a controller of Scribe's (a host's global prefix:
     * nestRoutePaths), `controller` being the controller's path and `method` the route's path
     * in it.
     */
    private readonly servedAt: (controller: string, method: string) => string[] = (
      controller,
      method,
    ) => [
      method === '/'
        ? `/${controller}`
        : `/${controller}${method.startsWith('/') ? '' : '/'}${method}`,
    ],
  ) {}

  /** Which of Scribe's routes `request` is for, if any (worked out once per request). */
  routeOf(request: Request): ScribeRoute {
    if (this.routes.has(request)) return this.routes.get(request);
    const route = this.match(request);
    this.routes.set(request, route);
    return route;
  }

  isScribe = (request: Request): boolean => this.routeOf(request) !== undefined;
  isGraphql = (request: Request): boolean => this.routeOf(request) === 'graphql';
  /** A transcript's export: Scribe's in every mode, never a host's (unlike the GraphQL path). */
  isExport = (request: Request): boolean => this.routeOf(request) === 'export';
  /** A transcript's import: Scribe's in every mode, as the export is. */
  isImport = (request: Request): boolean => this.routeOf(request) === 'import';
  /** A route of Scribe's own controllers that a session's caller uses: export or import. */
  isTransfer = (request: Request): boolean => this.isExport(request) || this.isImport(request);
  /** Where the refusal gate stands: Scribe's routes, or every path (guardAllPaths). */
  isGuarded = (request: Request): boolean => this.config.guardAllPaths || this.isScribe(request);
  /**
   * Where a source past its refusal budget is turned away (429): where the gate stands, but
   * never on /health (live, ready) and /metrics. A kubelet or a scraper shares its address with
   * whatever else comes through the same proxy or SNAT: an attacker's refusals there must not
   * fail a liveness probe (and restart the pod) or blind the metrics.
   */
  isGated = (request: Request): boolean => {
    const route = this.routeOf(request);
    return route !== 'health' && route !== 'metrics' && this.isGuarded(request);
  };

  /**
   * Why the GraphQL path cannot be served where it is configured, or undefined: Nest serves
   * /health or /metrics there (a host's global prefix or URI version put them on it: /api with
   * graphql.path /api/health), and those routes would answer it, not the GraphQL server.
   */
  graphqlPathTaken(): string | undefined {
    const patterns = this.compile(this.router());
    const path = this.config.graphqlPath;
    const taken = (['health', 'metrics'] as const).find((route) => patterns[route].test(path));
    if (taken === undefined) return undefined;
    return `graphql.path ${path} is where this app serves Scribe's /${taken} (under its global prefix or version): choose another graphql.path`;
  }

  private match(request: Request): ScribeRoute {
    const router = this.router();
    // Compiled at the first request: the router's settings are fixed once it exists.
    const patterns = (this.patterns ??= this.compile(router));
    // The whole path, from the root: inside a mounted layer, req.path is what is left of it.
    const path = request.baseUrl + request.path;
    if (patterns.health.test(path)) return 'health';
    if (patterns.metrics.test(path)) return 'metrics';
    if (patterns.export.test(path)) return 'export';
    if (patterns.import.test(path)) return 'import';
    return patterns.graphql.test(path) ? 'graphql' : undefined;
  }

  private compile(router: RouterView | undefined) {
    const flags = router?.caseSensitive ? '' : 'i';
    const slash = router?.strict ? '' : '/?';
    const graphql = escape(this.config.graphqlPath);
    const route = (name: ControllerRoute) => {
      const { controller, methods } = CONTROLLER_ROUTES[name];
      const paths = methods.flatMap((method) => this.servedAt(controller, method));
      const patterns = paths.map((path) => parameters(escape(path)));
      return new RegExp(`^(?:${patterns.join('|')})${slash}$`, flags);
    };
    return {
      health: route('health'),
      metrics: route('metrics'),
      export: route('export'),
      import: route('import'),
      graphql: new RegExp(`^${graphql}/?$`, flags),
    };
  }
}

/** `handler` on the requests `applies` to; the others go on untouched. */
export function onlyWhere(applies: (request: Request) => boolean, handler: RequestHandler) {
  return (request: Request, response: Response, next: NextFunction) =>
    applies(request) ? handler(request, response, next) : next();
}

/** An error handler on the requests `applies` to; the others' errors go on to the host's. */
export function errorsWhere(applies: (request: Request) => boolean, handler: ErrorRequestHandler) {
  return (error: unknown, request: Request, response: Response, next: NextFunction) =>
    applies(request) ? handler(error, request, response, next) : next(error);
}
