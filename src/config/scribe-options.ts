import { type SqliteSynchronousMode } from './store-settings.js';

// What a host passes to ScribeModule.forRoot: every field optional, each defaulting as its
// environment variable does (the variable is named in brackets; SCRIBE_OPTION_TABLE maps them).
// `npm start` builds this object from the environment (scribeOptionsFromEnvironment).

/** The database and how Scribe retries and listens to it. */
export interface ScribeDatabaseOptions {
  /** A postgres:// or postgresql:// URL; unset: SQLite in `dataDir` (DATABASE_URL). */
  url?: string;
  /** SQLite's `synchronous`: 'FULL' (default) or 'NORMAL' (SQLITE_SYNCHRONOUS). */
  sqliteSynchronous?: SqliteSynchronousMode;
  /** Between two attempts to reach the database; default 1000, 0..3600000 (DB_RETRY_INTERVAL_MS). */
  retryIntervalMs?: number;
  /** Quiet time before an idle instance probes the database; default 10000, 0 off (DB_IDLE_PROBE_MS). */
  idleProbeMs?: number;
  /** Journaled messages one session may hold; default 200, 1..100000 (MAX_PENDING_PER_SESSION). */
  maxPendingPerSession?: number;
  /** PostgreSQL: how often the commit feed pings itself; default 2000 (LISTEN_HEARTBEAT_MS). */
  listenHeartbeatMs?: number;
  /** Silence before LISTEN counts lost; default 6000 (LISTEN_HEARTBEAT_DEADLINE_MS). */
  listenHeartbeatDeadlineMs?: number;
}

/** The journal of accepted messages. */
export interface ScribeJournalOptions {
  /** How far ahead of this clock a record may be; default 86400000 (JOURNAL_MAX_CLOCK_AHEAD_MS). */
  maxClockAheadMs?: number;
}

/** Reading sessions and their cache. */
export interface ScribeSessionOptions {
  /** Sessions read from the database at once; default 2, 1..64 (SESSION_RESOLVE_CONCURRENCY). */
  resolveConcurrency?: number;
  /** Longest wait for a session read; default 10000 (SESSION_RESOLVE_TIMEOUT_MS). */
  resolveTimeoutMs?: number;
  /** Transcripts kept in memory; default 100, 0 turns it off (SESSION_CACHE_SIZE). */
  cacheSize?: number;
  /** Estimated bytes of all cached transcripts; default 64 MiB (SESSION_CACHE_MAX_BYTES). */
  cacheMaxBytes?: number;
}

/** Bounds on one request and its answer. */
export interface ScribeLimitOptions {
  /** Estimated bytes of one page of messages; default 8 MiB (MAX_PAGE_BYTES). */
  maxPageBytes?: number;
  /** The largest message; default 1 MiB (MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** The largest request body; default 16 MiB, at least maxMessageBytes + 64 KiB (MAX_BODY_BYTES). */
  maxBodyBytes?: number;
  /** The longest GraphQL document; default 64 KiB (MAX_QUERY_BYTES). */
  maxQueryBytes?: number;
  /** Lexical tokens of a document; default 1000 (MAX_QUERY_TOKENS). */
  maxQueryTokens?: number;
  /** Aliased fields of an operation; default 30 (MAX_QUERY_ALIASES). */
  maxQueryAliases?: number;
  /** Transcripts one request may read; default 10 (MAX_FULL_READS_PER_REQUEST). */
  maxFullReadsPerRequest?: number;
  /** The largest answer; default the larger of 4 pages and one mutation + one page (MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** Answers past maxPageBytes built at once; default 2 (MAX_LARGE_RESPONSES). */
  maxLargeResponses?: number;
  /** Refused requests per address and minute before 429; default 60, 0: off (MAX_REFUSALS_PER_MINUTE). */
  maxRefusalsPerMinute?: number;
}

/** Live subscriptions (graphql-ws) and their WebSocket connections. */
export interface ScribeSubscriptionOptions {
  /** Subscriptions (and connections) one instance serves; default 1000 (MAX_SUBSCRIPTIONS). */
  max?: number;
  /** Per principal; default a tenth of `max` (MAX_SUBSCRIPTIONS_PER_PRINCIPAL). */
  maxPerPrincipal?: number;
  /** Connections per source address; default a tenth of `max` (MAX_CONNECTIONS_PER_SOURCE). */
  maxConnectionsPerSource?: number;
  /** A connection holding no subscription is closed after; default 20000 (SUBSCRIPTION_IDLE_MS). */
  idleMs?: number;
  /** Messages a subscriber may fall behind by; default 256 (SUBSCRIPTION_BUFFER). */
  buffer?: number;
  /** Bytes a subscriber may fall behind by; default 16 MiB (SUBSCRIPTION_BUFFER_BYTES). */
  bufferBytes?: number;
  /** WebSocket ping interval; default 12000 (SUBSCRIPTION_KEEPALIVE_MS). */
  keepAliveMs?: number;
}

/** The HTTP server's deadlines and what stands in front of it. */
export interface ScribeHttpOptions {
  /** A request head's deadline; default 10000 (HEADERS_TIMEOUT_MS). */
  headersTimeoutMs?: number;
  /** A request body's base deadline; default 10000 (BODY_TIMEOUT_MS). */
  bodyTimeoutMs?: number;
  /** The slowest a body may arrive; default 65536 (BODY_MIN_BYTES_PER_SECOND). */
  bodyMinBytesPerSecond?: number;
  /** Idle keep-alive connections close after; default 5000 (KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs?: number;
  /** Express's `trust proxy`: false (default), a number of proxies, or which (TRUST_PROXY). */
  trustProxy?: false | number | string;
  /** Origins browsers may call from, e.g. ['https://chat.example.com']; default none (CORS_ORIGINS). */
  corsOrigins?: string[];
  /**
   * Request headers a preflight allows beyond Scribe's own (authorization, content-type,
   * Apollo's CSRF and client-awareness headers); default none (CORS_ALLOWED_HEADERS).
   */
  corsAllowedHeaders?: string[];
  /**
   * Whether the refusal gate covers every path of the HTTP server rather than Scribe's own;
   * default false, as a host serves other routes too (no variable: `npm start` sets true).
   */
  guardAllPaths?: boolean;
  /** Whether Scribe sets the HTTP server's timeouts; default true (no variable). */
  serverDeadlines?: boolean;
}

/** The GraphQL endpoint. */
export interface ScribeGraphqlOptions {
  /** Where it is served: starts with '/', no spaces; default '/graphql' (GRAPHQL_PATH). */
  path?: string;
  /** Whether the schema can be introspected; default `development` (GRAPHQL_INTROSPECTION). */
  introspection?: boolean;
  /**
   * Who serves it: 'own' (default), an endpoint of Scribe's own at `path`; 'host', the host's
   * GraphQLModule, which takes Scribe's pieces from ScribeGraphQL.forHost (no variable).
   */
  mode?: ScribeGraphQLMode;
}

/** The admin console, a page that works through the GraphQL API with an admin token. */
export interface ScribeAdminConsoleOptions {
  /** Where it is served: as graphql.path; default '/admin' (ADMIN_CONSOLE_PATH). */
  path?: string;
}

/** Who serves Scribe's GraphQL API (see ScribeGraphqlOptions.mode). */
export type ScribeGraphQLMode = 'own' | 'host';

/**
 * Scribe's log lines. Their format and levels are the logger's: `npm start`'s (LOG_FORMAT,
 * LOG_LEVEL), or a host's own.
 */
export interface ScribeLoggingOptions {
  /** An access line per request and WebSocket at the `log` level; default false: at debug (LOG_ACCESS). */
  access?: boolean;
}

/** Who may call. */
export interface ScribeAuthOptions {
  /** Static tokens and scopes, `k1=read+append,ops=admin`; default none (API_TOKENS). */
  apiTokens?: string;
  /** A token with the admin scope; default none (ADMIN_TOKEN). */
  adminToken?: string;
  /** HMAC secret of accepted JWTs; default none (JWT_SECRET). */
  jwtSecret?: string;
  /** PEM public key of accepted JWTs; default none (JWT_PUBLIC_KEY). */
  jwtPublicKey?: string;
  /** An OIDC provider's JSON Web Key Set URL, keys that rotate; default none (JWT_JWKS_URL). */
  jwtJwksUrl?: string;
  /** Least time between fetches of it for unknown keys; default 30000 (JWT_JWKS_COOLDOWN_MS). */
  jwtJwksCooldownMs?: number;
  /** Required JWT issuer; default none (JWT_ISSUER). */
  jwtIssuer?: string;
  /** Required JWT audience; default none (JWT_AUDIENCE). */
  jwtAudience?: string;
  /** Anonymous callers on a non-loopback host; default false (ALLOW_ANONYMOUS). */
  allowAnonymous?: boolean;
}

/** Everything a host may set on Scribe; `{}` runs it as `npm start` does with no variable set. */
export interface ScribeOptions {
  /** Where the SQLite database and the journal live; default './data' (DATA_DIR). */
  dataDir?: string;
  /** The journal's folder; default `dataDir`/pending_messages (SPOOL_DIR). */
  spoolDir?: string;
  database?: ScribeDatabaseOptions;
  journal?: ScribeJournalOptions;
  sessions?: ScribeSessionOptions;
  limits?: ScribeLimitOptions;
  subscriptions?: ScribeSubscriptionOptions;
  http?: ScribeHttpOptions;
  graphql?: ScribeGraphqlOptions;
  adminConsole?: ScribeAdminConsoleOptions;
  auth?: ScribeAuthOptions;
  logging?: ScribeLoggingOptions;
  /** Development mode: stack traces, introspection by default; default false (NODE_ENV=development). */
  development?: boolean;
  /** Test only: where the process kills itself, `name` or `name@n` (SCRIBE_FAILPOINT). */
  failpoint?: string;
}
