import { resolve } from 'node:path';
import { accessSettings, accessVariablesOf, type AccessSettings } from './access-settings.js';
import { Environment } from './environment.js';
import { maxResponseBytesOf } from './read-limit-settings.js';
import { type SqliteSynchronousMode } from './store-settings.js';
import { corsHeadersOf, corsOriginsOf } from './http-front.js';
import { resolveScribeConfig } from './resolve-scribe-config.js';
import { scribeOptionsFromEnvironment } from './scribe-options-from-environment.js';

export type DatabaseSettings =
  | { readonly kind: 'sqlite'; readonly path: string; readonly synchronous: SqliteSynchronousMode }
  | { readonly kind: 'postgres'; readonly url: string };

/** Bounds on one GraphQL request, checked before it runs. */
export interface QueryLimitSettings {
  readonly maxBytes: number;
  readonly maxTokens: number;
  readonly maxAliases: number;
  readonly maxFullReads: number;
}

/** Bounds on the answer to one request, checked while it is built (see ResponseBudget). */
export interface ResponseLimitSettings {
  /** MAX_RESPONSE_BYTES: past it the answer is refused, QUERY_TOO_COMPLEX. */
  readonly maxBytes: number;
  /** Past this many bytes a request needs one of `maxLarge` slots to go on (MAX_PAGE_BYTES). */
  readonly largeBytes: number;
  readonly maxLarge: number;
  /** How long a request waits for a slot before RESPONSE_SLOT_TIMEOUT. */
  readonly slotTimeoutMs: number;
}

/** Bounds on live subscriptions (graphql-ws). */
export interface SubscriptionSettings {
  readonly maxSubscriptions: number;
  /** Subscriptions one principal may hold on this instance (MAX_SUBSCRIPTIONS_PER_PRINCIPAL). */
  readonly maxPerPrincipal: number;
  /** Connections one source address may hold on this instance (MAX_CONNECTIONS_PER_SOURCE). */
  readonly maxConnectionsPerSource: number;
  /** How long an acknowledged connection may hold no subscription (SUBSCRIPTION_IDLE_MS). */
  readonly idleMs: number;
  readonly bufferMessages: number;
  readonly bufferBytes: number;
  readonly keepAliveMs: number;
}

/** How the PostgreSQL commit feed proves that its LISTEN connection still hears. */
export interface ListenHeartbeatSettings {
  /** How often the feed sends itself a notice (LISTEN_HEARTBEAT_MS). */
  readonly intervalMs: number;
  /** How long it may hear none before its followers are told (LISTEN_HEARTBEAT_DEADLINE_MS). */
  readonly deadlineMs: number;
}

/** Deadlines of the HTTP server: for a request's head, its body, and an idle connection. */
export interface HttpTimeoutSettings {
  readonly headersTimeoutMs: number;
  /** A body must arrive within `bodyTimeoutMs` + 1 s per `bodyMinBytesPerSecond` received. */
  readonly bodyTimeoutMs: number;
  readonly bodyMinBytesPerSecond: number;
  readonly keepAliveTimeoutMs: number;
  /**
   * Node's own bound on a whole request's arrival: a backstop past the longest head and body
   * the two deadlines above allow (the body's is checked first, and answered with a code).
   */
  readonly requestTimeoutMs: number;
}

/** What only a host sets, having no environment variable (see ScribeHttpOptions). */
export interface HostSwitches {
  readonly guardAllPaths: boolean;
  readonly serverDeadlines: boolean;
}

/**
 * Typed, resolved view of the validated options (resolveScribeConfig). PORT and HOST are not
 * here: the host listens itself (`npm start` reads them with serveSettingsFromEnvironment).
 */
export class ScribeConfig {
  readonly dataDir: string;
  readonly spoolDir: string;
  readonly database: DatabaseSettings;
  readonly maxPendingPerSession: number;
  readonly dbRetryIntervalMs: number;
  /** DB_IDLE_PROBE_MS: quiet time before an idle instance probes the database; 0 never. */
  readonly dbIdleProbeMs: number;
  readonly listenHeartbeat: ListenHeartbeatSettings;
  /** A journaled record accepted further ahead of this clock than this is refused at adoption. */
  readonly journalMaxClockAheadMs: number;
  readonly sessionResolveConcurrency: number;
  readonly sessionResolveTimeoutMs: number;
  readonly sessionCacheSize: number;
  readonly sessionCacheMaxBytes: number;
  readonly maxPageBytes: number;
  readonly maxMessageBytes: number;
  readonly maxBodyBytes: number;
  readonly queryLimits: QueryLimitSettings;
  readonly responseLimits: ResponseLimitSettings;
  readonly subscriptions: SubscriptionSettings;
  /** Refused requests per source address and minute before it is answered 429; 0: off. */
  readonly maxRefusalsPerMinute: number;
  readonly httpTimeouts: HttpTimeoutSettings;
  /** Express's `trust proxy` setting: false, a number of proxies, or which addresses. */
  readonly trustProxy: false | number | string;
  /** Origins browsers may call from (CORS); empty: none. */
  readonly corsOrigins: string[];
  /** Request headers preflights allow beyond Scribe's own (CORS_ALLOWED_HEADERS), lower-case. */
  readonly corsAllowedHeaders: string[];
  readonly access: AccessSettings;
  readonly development: boolean;
  /** Whether the schema can be introspected (GRAPHQL_INTROSPECTION, else development only). */
  readonly introspection: boolean;
  /** Whether each request's access line is logged at `log` (LOG_ACCESS), else at debug. */
  readonly accessLog: boolean;
  /** Test-only (crash suite): where this process kills itself. */
  readonly failpoint: string | undefined;
  /** Where the GraphQL endpoint is served (GRAPHQL_PATH). */
  readonly graphqlPath: string;
  /** Where the admin console is served (ADMIN_CONSOLE_PATH). */
  readonly adminConsolePath: string;
  /** Whether the refusal gate covers every path, not only Scribe's (a host serving only Scribe). */
  readonly guardAllPaths: boolean;
  /** Whether Scribe sets the HTTP server's timeouts (httpTimeouts). */
  readonly serverDeadlines: boolean;

  /**
   * From raw variables, as tests and tools pass them, through the environment adapter as
   * `npm start` reads them; throws InvalidEnvironmentError naming the variable.
   */
  static fromVariables(variables: Record<string, string | undefined>): ScribeConfig {
    return resolveScribeConfig(scribeOptionsFromEnvironment(variables));
  }

  constructor(
    environment: Environment,
    switches: HostSwitches = { guardAllPaths: false, serverDeadlines: true },
  ) {
    const get = <K extends keyof Environment>(key: K): Environment[K] => environment[key];
    this.dataDir = resolve(get('DATA_DIR'));
    this.spoolDir = resolve(get('SPOOL_DIR') ?? resolve(this.dataDir, 'pending_messages'));
    const url = get('DATABASE_URL');
    this.database = url
      ? { kind: 'postgres', url }
      : {
          kind: 'sqlite',
          path: resolve(this.dataDir, 'scribe.sqlite'),
          synchronous: get('SQLITE_SYNCHRONOUS'),
        };
    this.maxPendingPerSession = get('MAX_PENDING_PER_SESSION');
    this.dbRetryIntervalMs = get('DB_RETRY_INTERVAL_MS');
    this.dbIdleProbeMs = get('DB_IDLE_PROBE_MS');
    this.listenHeartbeat = {
      intervalMs: get('LISTEN_HEARTBEAT_MS'),
      deadlineMs: get('LISTEN_HEARTBEAT_DEADLINE_MS'),
    };
    this.journalMaxClockAheadMs = get('JOURNAL_MAX_CLOCK_AHEAD_MS');
    this.sessionResolveConcurrency = get('SESSION_RESOLVE_CONCURRENCY');
    this.sessionResolveTimeoutMs = get('SESSION_RESOLVE_TIMEOUT_MS');
    this.sessionCacheSize = get('SESSION_CACHE_SIZE');
    this.sessionCacheMaxBytes = get('SESSION_CACHE_MAX_BYTES');
    this.maxPageBytes = get('MAX_PAGE_BYTES');
    this.maxMessageBytes = get('MAX_MESSAGE_BYTES');
    this.maxBodyBytes = get('MAX_BODY_BYTES');
    this.queryLimits = {
      maxBytes: get('MAX_QUERY_BYTES'),
      maxTokens: get('MAX_QUERY_TOKENS'),
      maxAliases: get('MAX_QUERY_ALIASES'),
      maxFullReads: get('MAX_FULL_READS_PER_REQUEST'),
    };
    this.responseLimits = {
      maxBytes: maxResponseBytesOf(environment),
      largeBytes: this.maxPageBytes,
      maxLarge: get('MAX_LARGE_RESPONSES'),
      slotTimeoutMs: this.sessionResolveTimeoutMs,
    };
    const maxSubscriptions = get('MAX_SUBSCRIPTIONS');
    // A tenth each by default: one user, or one address, leaves nine tenths to the others.
    const share = Math.max(1, Math.ceil(maxSubscriptions / 10));
    this.subscriptions = {
      maxSubscriptions,
      maxPerPrincipal: get('MAX_SUBSCRIPTIONS_PER_PRINCIPAL') ?? share,
      maxConnectionsPerSource: get('MAX_CONNECTIONS_PER_SOURCE') ?? share,
      idleMs: get('SUBSCRIPTION_IDLE_MS'),
      bufferMessages: get('SUBSCRIPTION_BUFFER'),
      bufferBytes: get('SUBSCRIPTION_BUFFER_BYTES'),
      keepAliveMs: get('SUBSCRIPTION_KEEPALIVE_MS'),
    };
    this.maxRefusalsPerMinute = get('MAX_REFUSALS_PER_MINUTE');
    const bodyTimeoutMs = get('BODY_TIMEOUT_MS');
    const bodyMinBytesPerSecond = get('BODY_MIN_BYTES_PER_SECOND');
    this.httpTimeouts = {
      headersTimeoutMs: get('HEADERS_TIMEOUT_MS'),
      bodyTimeoutMs,
      bodyMinBytesPerSecond,
      keepAliveTimeoutMs: get('KEEP_ALIVE_TIMEOUT_MS'),
      requestTimeoutMs:
        get('HEADERS_TIMEOUT_MS') +
        bodyTimeoutMs +
        Math.ceil((this.maxBodyBytes * 1000) / bodyMinBytesPerSecond) +
        5000,
    };
    const trustProxy = get('TRUST_PROXY');
    this.trustProxy = !trustProxy
      ? false
      : /^\d+$/.test(trustProxy)
        ? Number(trustProxy)
        : trustProxy;
    this.corsOrigins = corsOriginsOf(get('CORS_ORIGINS'));
    this.corsAllowedHeaders = corsHeadersOf(get('CORS_ALLOWED_HEADERS'));
    // No host here: whether anonymous callers may reach a non-loopback address is the
    // listener's to check (scribeOptionsFromEnvironment does for `npm start`).
    this.access = accessSettings(accessVariablesOf(environment, undefined));
    this.development = get('NODE_ENV') === 'development';
    const introspection = get('GRAPHQL_INTROSPECTION');
    this.introspection = introspection === undefined ? this.development : introspection === 'true';
    this.accessLog = get('LOG_ACCESS') === 'true';
    this.failpoint = get('SCRIBE_FAILPOINT') || undefined;
    this.graphqlPath = get('GRAPHQL_PATH');
    this.adminConsolePath = get('ADMIN_CONSOLE_PATH');
    this.guardAllPaths = switches.guardAllPaths;
    this.serverDeadlines = switches.serverDeadlines;
  }
}
