import { type Environment } from './environment.js';

/**
 * How an option's value is typed, and so how it crosses to and from its variable:
 * - integer: a number (the variable's decimal digits);
 * - string, secret: a string as is (a secret's value is never echoed in an error);
 * - directory: a string naming a directory, never empty or only spaces;
 * - boolean: true or false ('true' / 'false');
 * - list: a string[] (comma-separated);
 * - proxy: false, a number of proxies, or a string (TRUST_PROXY's forms);
 * - development: true when NODE_ENV is 'development';
 * - mode: 'own' or 'host' (no variable).
 */
export type OptionKind =
  | 'integer'
  | 'string'
  | 'directory'
  | 'secret'
  | 'boolean'
  | 'list'
  | 'proxy'
  | 'development'
  | 'mode';

/** A variable of Environment that a Scribe option stands for (PORT and HOST are not options). */
export type OptionVariable = Exclude<keyof Environment, 'PORT' | 'HOST'>;

/** An option's dotted path, its environment variable (none for module-only ones), its kind. */
export type OptionRow = readonly [
  path: string,
  variable: OptionVariable | undefined,
  kind: OptionKind,
];

/**
 * Every Scribe option and the variable it is read from: the one table the environment adapter,
 * resolveScribeConfig and the options table of docs/nest-module.md all follow. The variables are in
 * Environment's order, so that of two bad options the one its variable would be is named.
 */
export const SCRIBE_OPTION_TABLE: readonly OptionRow[] = [
  ['dataDir', 'DATA_DIR', 'directory'],
  ['database.url', 'DATABASE_URL', 'secret'],
  ['spoolDir', 'SPOOL_DIR', 'directory'],
  ['database.sqliteSynchronous', 'SQLITE_SYNCHRONOUS', 'string'],
  ['database.maxPendingPerSession', 'MAX_PENDING_PER_SESSION', 'integer'],
  ['database.retryIntervalMs', 'DB_RETRY_INTERVAL_MS', 'integer'],
  ['database.idleProbeMs', 'DB_IDLE_PROBE_MS', 'integer'],
  ['database.listenHeartbeatMs', 'LISTEN_HEARTBEAT_MS', 'integer'],
  ['database.listenHeartbeatDeadlineMs', 'LISTEN_HEARTBEAT_DEADLINE_MS', 'integer'],
  ['journal.maxClockAheadMs', 'JOURNAL_MAX_CLOCK_AHEAD_MS', 'integer'],
  ['sessions.resolveConcurrency', 'SESSION_RESOLVE_CONCURRENCY', 'integer'],
  ['sessions.resolveTimeoutMs', 'SESSION_RESOLVE_TIMEOUT_MS', 'integer'],
  ['sessions.cacheSize', 'SESSION_CACHE_SIZE', 'integer'],
  ['sessions.cacheMaxBytes', 'SESSION_CACHE_MAX_BYTES', 'integer'],
  ['limits.maxPageBytes', 'MAX_PAGE_BYTES', 'integer'],
  ['limits.maxResponseBytes', 'MAX_RESPONSE_BYTES', 'integer'],
  ['limits.maxLargeResponses', 'MAX_LARGE_RESPONSES', 'integer'],
  ['limits.maxMessageBytes', 'MAX_MESSAGE_BYTES', 'integer'],
  ['limits.maxBodyBytes', 'MAX_BODY_BYTES', 'integer'],
  ['limits.maxQueryBytes', 'MAX_QUERY_BYTES', 'integer'],
  ['limits.maxQueryTokens', 'MAX_QUERY_TOKENS', 'integer'],
  ['limits.maxQueryAliases', 'MAX_QUERY_ALIASES', 'integer'],
  ['limits.maxFullReadsPerRequest', 'MAX_FULL_READS_PER_REQUEST', 'integer'],
  ['subscriptions.max', 'MAX_SUBSCRIPTIONS', 'integer'],
  ['subscriptions.maxPerPrincipal', 'MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 'integer'],
  ['subscriptions.maxConnectionsPerSource', 'MAX_CONNECTIONS_PER_SOURCE', 'integer'],
  ['subscriptions.idleMs', 'SUBSCRIPTION_IDLE_MS', 'integer'],
  ['subscriptions.buffer', 'SUBSCRIPTION_BUFFER', 'integer'],
  ['subscriptions.bufferBytes', 'SUBSCRIPTION_BUFFER_BYTES', 'integer'],
  ['subscriptions.keepAliveMs', 'SUBSCRIPTION_KEEPALIVE_MS', 'integer'],
  ['limits.maxRefusalsPerMinute', 'MAX_REFUSALS_PER_MINUTE', 'integer'],
  ['http.headersTimeoutMs', 'HEADERS_TIMEOUT_MS', 'integer'],
  ['http.bodyTimeoutMs', 'BODY_TIMEOUT_MS', 'integer'],
  ['http.bodyMinBytesPerSecond', 'BODY_MIN_BYTES_PER_SECOND', 'integer'],
  ['http.keepAliveTimeoutMs', 'KEEP_ALIVE_TIMEOUT_MS', 'integer'],
  ['http.trustProxy', 'TRUST_PROXY', 'proxy'],
  ['http.corsOrigins', 'CORS_ORIGINS', 'list'],
  ['http.corsAllowedHeaders', 'CORS_ALLOWED_HEADERS', 'list'],
  ['http.guardAllPaths', undefined, 'boolean'],
  ['http.serverDeadlines', undefined, 'boolean'],
  ['auth.adminToken', 'ADMIN_TOKEN', 'secret'],
  ['auth.apiTokens', 'API_TOKENS', 'secret'],
  ['auth.jwtSecret', 'JWT_SECRET', 'secret'],
  ['auth.jwtPublicKey', 'JWT_PUBLIC_KEY', 'string'],
  ['auth.jwtJwksUrl', 'JWT_JWKS_URL', 'string'],
  ['auth.jwtJwksCooldownMs', 'JWT_JWKS_COOLDOWN_MS', 'integer'],
  ['auth.jwtIssuer', 'JWT_ISSUER', 'string'],
  ['auth.jwtAudience', 'JWT_AUDIENCE', 'string'],
  ['auth.allowAnonymous', 'ALLOW_ANONYMOUS', 'boolean'],
  ['logging.access', 'LOG_ACCESS', 'boolean'],
  ['graphql.introspection', 'GRAPHQL_INTROSPECTION', 'boolean'],
  ['graphql.path', 'GRAPHQL_PATH', 'string'],
  ['adminConsole.path', 'ADMIN_CONSOLE_PATH', 'string'],
  ['graphql.mode', undefined, 'mode'],
  ['development', 'NODE_ENV', 'development'],
  ['failpoint', 'SCRIBE_FAILPOINT', 'string'],
];

/** The option a variable stands for, by the variable's name. */
export const OPTION_OF_VARIABLE: ReadonlyMap<string, OptionRow> = new Map(
  SCRIBE_OPTION_TABLE.flatMap((row) => (row[1] ? [[row[1], row] as const] : [])),
);

/** The value at `path` of a nested options object, or undefined. */
export function optionAt(options: object, path: string): unknown {
  let value: unknown = options;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Sets `value` at `path` of a nested options object, making the groups on the way. */
export function setOptionAt(options: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let group = options;
  for (const key of keys.slice(0, -1)) {
    group[key] ??= {};
    group = group[key] as Record<string, unknown>;
  }
  group[keys[keys.length - 1]] = value;
}
