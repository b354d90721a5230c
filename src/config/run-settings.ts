import { IsIn, IsOptional, IsString, Matches, ValidateBy } from 'class-validator';
import { AuthSettings } from './auth-settings.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** How this process runs: its logs, GraphQL introspection, NODE_ENV, the test failpoint. */
export class RunSettings extends AuthSettings {
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevelName = 'log';

  /** `npm start`'s log lines: 'text' for people, 'json' (one object a line) for a shipper. */
  @IsIn(LOG_FORMATS)
  LOG_FORMAT: LogFormat = 'text';

  /** An access line per request at the default level; unset: at debug only. */
  @IsOptional()
  @IsIn(['true', 'false'])
  LOG_ACCESS?: 'true' | 'false';

  /** Whether `__schema` and `__type` are answered; unset: only with NODE_ENV=development. */
  @IsOptional()
  @IsIn(['true', 'false'])
  GRAPHQL_INTROSPECTION?: 'true' | 'false';

  /** Where the GraphQL endpoint is served: literal segments (graphqlPathProblem). */
  @ValidateBy({
    name: 'graphqlPath',
    validator: {
      validate: (value: unknown) => graphqlPathProblem(value) === undefined,
      defaultMessage: (args) => `GRAPHQL_PATH ${graphqlPathProblem(args?.value)}`,
    },
  })
  GRAPHQL_PATH = '/graphql';

  /** Where the admin console is served: literal segments, as GRAPHQL_PATH. */
  @ValidateBy({
    name: 'adminConsolePath',
    validator: {
      validate: (value: unknown) => routePathProblem(value, '/admin or /ops/admin') === undefined,
      defaultMessage: (args) =>
        `ADMIN_CONSOLE_PATH ${routePathProblem(args?.value, '/admin or /ops/admin')}`,
    },
  })
  ADMIN_CONSOLE_PATH = '/admin';

  @IsOptional()
  @IsString()
  NODE_ENV?: string;

  /**
   * Test-only: a place where this process kills itself with SIGKILL (`name` or `name@n`), for
   * the crash suite. Never set it in production.
   */
  @IsOptional()
  @Matches(/^[a-z][a-z0-9.-]*(@[1-9]\d*)?$/, {
    message: 'SCRIBE_FAILPOINT must be a failpoint name, optionally followed by @n',
  })
  SCRIBE_FAILPOINT?: string;
}

const SEGMENTS = /^(\/[A-Za-z0-9._~-]+)+$/;
const SCRIBE_ROUTES = ['/health', '/metrics'];

/**
 * Why `path` cannot be the GraphQL path, or undefined: it must be one or more literal segments
 * of URL-safe characters, as Express matches them. Express takes a path as a pattern, so '*',
 * ':x', '(', '?' would stop the start with path-to-regexp's TypeError or match other paths; a
 * character a client sends percent-encoded ('ä', '#', a space) is never matched; '.' and '..'
 * segments are resolved away by clients; '/' would take every route of the app; and /health,
 * /metrics (any case: Express routes ignore it by default) are Scribe's own routes.
 */
export function graphqlPathProblem(path: unknown): string | undefined {
  return routePathProblem(path, '/graphql or /api/graphql');
}

/** graphqlPathProblem's rules, for any path Scribe serves a route at; `examples` for the message. */
export function routePathProblem(path: unknown, examples: string): string | undefined {
  const got = `(got ${JSON.stringify(path)})`;
  if (path === '/') return `must not be /: it would take every route of the app ${got}`;
  if (typeof path !== 'string' || !SEGMENTS.test(path)) {
    return `must be one or more /segments of letters, digits and . _ ~ - such as ${examples} ${got}`;
  }
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) {
    return `must not hold . or .. segments ${got}`;
  }
  const lower = path.toLowerCase();
  if (SCRIBE_ROUTES.some((route) => lower === route || lower.startsWith(`${route}/`))) {
    return `must not be /health, /metrics or under them: Scribe serves those routes ${got}`;
  }
  return undefined;
}
