import { plainToInstance } from 'class-transformer';
import { checkTrustProxy, corsOriginsOf } from './http-front.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';

export { InvalidEnvironmentError };
import {
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  validateSync,
} from 'class-validator';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/**
 * SQLite's `synchronous` setting. FULL syncs every commit to disk: an answered PERSISTED
 * survives a power cut. NORMAL (in WAL mode) survives a crash of Scribe but may lose the last
 * commits to a power cut or kernel crash, and writes much faster.
 */
export const SQLITE_SYNCHRONOUS_MODES = ['FULL', 'NORMAL'] as const;
export type SqliteSynchronousMode = (typeof SQLITE_SYNCHRONOUS_MODES)[number];

/** Room left in a request body for the query text and the other fields of a message. */
export const BODY_ROOM_BYTES = 64 * 1024;

/**
 * Every environment variable Scribe reads, with its default. Checked once at start;
 * a bad value stops the start with one line naming the variable.
 */
export class Environment {
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  @IsNotEmpty()
  HOST = '127.0.0.1';

  @IsString()
  @IsNotEmpty()
  DATA_DIR = './data';

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'DATABASE_URL must be a postgres:// or postgresql:// URL',
  })
  DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  SPOOL_DIR?: string;

  @IsIn(SQLITE_SYNCHRONOUS_MODES)
  SQLITE_SYNCHRONOUS: SqliteSynchronousMode = 'FULL';

  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_PENDING_PER_SESSION = 200;

  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DB_RETRY_INTERVAL_MS = 1000;

  /**
   * PostgreSQL only: how often each instance sends itself a notice through the database, to
   * prove that its LISTEN connection (live updates from every instance) still hears.
   */
  @IsInt()
  @Min(100)
  @Max(600_000)
  LISTEN_HEARTBEAT_MS = 2000;

  /**
   * How long an instance may hear none of its notices before it counts its LISTEN connection
   * lost: subscriptions end with SUBSCRIPTION_INTERRUPTED, and it connects again. Must be longer
   * than LISTEN_HEARTBEAT_MS.
   */
  @IsInt()
  @Min(200)
  @Max(3_600_000)
  LISTEN_HEARTBEAT_DEADLINE_MS = 6000;

  /**
   * How far ahead of this instance's clock a journaled record's acceptance time may be before
   * adoption refuses it as from the future (sets it aside, bytes and all). Default one day.
   */
  @IsInt()
  @Min(1000)
  @Max(31_536_000_000)
  JOURNAL_MAX_CLOCK_AHEAD_MS = 86_400_000;

  @IsInt()
  @Min(1)
  @Max(64)
  SESSION_RESOLVE_CONCURRENCY = 2;

  @IsInt()
  @Min(1)
  @Max(600_000)
  SESSION_RESOLVE_TIMEOUT_MS = 10_000;

  @IsInt()
  @Min(0)
  @Max(1_000_000)
  SESSION_CACHE_SIZE = 100;

  /** Estimated bytes of all cached transcripts; a session larger than this is read by pages. */
  @IsInt()
  @Min(1024 * 1024)
  @Max(64 * 1024 * 1024 * 1024)
  SESSION_CACHE_MAX_BYTES = 64 * 1024 * 1024;

  /**
   * Estimated bytes (as SESSION_CACHE_MAX_BYTES counts them) of one page of messages: past it a
   * page ends early, with hasNextPage, however small its `first`.
   */
  @IsInt()
  @Min(64 * 1024)
  @Max(1024 * 1024 * 1024)
  MAX_PAGE_BYTES = 8 * 1024 * 1024;

  /**
   * The largest answer (serialised JSON, estimated from stored sizes) one request may get;
   * unset: the larger of 4 × MAX_PAGE_BYTES and what one mutation and one page can answer.
   */
  @IsOptional()
  @IsInt()
  @Min(64 * 1024)
  @Max(256 * 1024 * 1024)
  MAX_RESPONSE_BYTES?: number;

  /** Requests whose answer grows past MAX_PAGE_BYTES that may be built at once; more wait. */
  @IsInt()
  @Min(1)
  @Max(64)
  MAX_LARGE_RESPONSES = 2;

  @IsInt()
  @Min(1)
  @Max(256 * 1024 * 1024)
  MAX_MESSAGE_BYTES = 1024 * 1024;

  @IsInt()
  @Min(1)
  @Max(1024 * 1024 * 1024)
  MAX_BODY_BYTES = 16 * 1024 * 1024;

  /** The longest GraphQL document (query text) accepted, checked before it is parsed. */
  @IsInt()
  @Min(256)
  @Max(16 * 1024 * 1024)
  MAX_QUERY_BYTES = 64 * 1024;

  /** The most lexical tokens a document may hold; the parser stops past it. */
  @IsInt()
  @Min(200)
  @Max(1_000_000)
  MAX_QUERY_TOKENS = 1000;

  /** The most aliased fields an operation may hold. */
  @IsInt()
  @Min(0)
  @Max(100_000)
  MAX_QUERY_ALIASES = 30;

  /** The most session transcripts (`messages` selections) one request may read. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_FULL_READS_PER_REQUEST = 10;

  /** Live subscriptions (graphql-ws) one instance serves at once; WebSocket connections too. */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_SUBSCRIPTIONS = 1000;

  /**
   * Live subscriptions one principal (a static token, a JWT's issuer and subject, an anonymous
   * caller's address) may hold on one instance, over all its connections. Unset: a tenth of
   * MAX_SUBSCRIPTIONS, so that one user cannot take every slot.
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_SUBSCRIPTIONS_PER_PRINCIPAL?: number;

  /**
   * WebSocket connections one source address (an IPv6 /64) may hold on one instance,
   * acknowledged or not. Unset: a tenth of MAX_SUBSCRIPTIONS.
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_CONNECTIONS_PER_SOURCE?: number;

  /** How long an acknowledged connection may hold no subscription before it is closed (4000). */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  SUBSCRIPTION_IDLE_MS = 20_000;

  /**
   * Messages one subscriber may fall behind by: past it (or past SUBSCRIPTION_BUFFER_BYTES)
   * its subscription ends with SLOW_CONSUMER rather than hold more memory.
   */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SUBSCRIPTION_BUFFER = 256;

  /** Estimated bytes of the messages one subscriber may fall behind by (one always fits). */
  @IsInt()
  @Min(64 * 1024)
  @Max(1024 * 1024 * 1024)
  SUBSCRIPTION_BUFFER_BYTES = 16 * 1024 * 1024;

  /** How often the server pings each WebSocket; one that has not answered by the next is cut. */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  SUBSCRIPTION_KEEPALIVE_MS = 12_000;

  /**
   * Refused requests (HTTP 4xx) one source address may cause per minute, in bursts of as
   * many; past that its requests are answered 429 RATE_LIMITED unread. 0 turns it off.
   */
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  MAX_REFUSALS_PER_MINUTE = 60;

  /** The longest a request's head (request line and headers) may take to arrive; 408 past it. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  HEADERS_TIMEOUT_MS = 10_000;

  /**
   * A request body's deadline, with BODY_MIN_BYTES_PER_SECOND: it must have arrived within this
   * much plus one second per BODY_MIN_BYTES_PER_SECOND bytes received; 408 past it.
   */
  @IsInt()
  @Min(100)
  @Max(600_000)
  BODY_TIMEOUT_MS = 10_000;

  /** The slowest a body may arrive, past BODY_TIMEOUT_MS (see there). */
  @IsInt()
  @Min(1024)
  @Max(1024 * 1024 * 1024)
  BODY_MIN_BYTES_PER_SECOND = 64 * 1024;

  /** How long an idle keep-alive connection stays open between requests. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  KEEP_ALIVE_TIMEOUT_MS = 5000;

  /**
   * Express's `trust proxy`: how many proxies (a number) or which (addresses, subnets,
   * `loopback`, comma-separated) stand in front, so that the source address is the client's.
   */
  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  /** Origins browsers may call Scribe from, comma-separated (`https://chat.example.com`). */
  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  @IsOptional()
  @IsString()
  ADMIN_TOKEN?: string;

  /** Static bearer tokens and their scopes: `k1=read+append,k2=read,ops=admin`. */
  @IsOptional()
  @IsString()
  API_TOKENS?: string;

  /** HMAC secret that signs accepted JWTs (HS256/384/512). */
  @IsOptional()
  @IsString()
  JWT_SECRET?: string;

  /** PEM public key that verifies accepted JWTs (RS, PS or ES algorithms). */
  @IsOptional()
  @IsString()
  JWT_PUBLIC_KEY?: string;

  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;

  /** Lets anonymous callers in on a non-loopback HOST when no token is configured. */
  @IsIn(['true', 'false'])
  ALLOW_ANONYMOUS: 'true' | 'false' = 'false';

  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevelName = 'log';

  /** Whether `__schema` and `__type` are answered; unset: only with NODE_ENV=development. */
  @IsOptional()
  @IsIn(['true', 'false'])
  GRAPHQL_INTROSPECTION?: 'true' | 'false';

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

const INTEGER_KEYS = new Set([
  'PORT',
  'MAX_PENDING_PER_SESSION',
  'DB_RETRY_INTERVAL_MS',
  'LISTEN_HEARTBEAT_MS',
  'LISTEN_HEARTBEAT_DEADLINE_MS',
  'JOURNAL_MAX_CLOCK_AHEAD_MS',
  'SESSION_RESOLVE_CONCURRENCY',
  'SESSION_RESOLVE_TIMEOUT_MS',
  'SESSION_CACHE_SIZE',
  'SESSION_CACHE_MAX_BYTES',
  'MAX_PAGE_BYTES',
  'MAX_MESSAGE_BYTES',
  'MAX_RESPONSE_BYTES',
  'MAX_LARGE_RESPONSES',
  'MAX_BODY_BYTES',
  'MAX_QUERY_BYTES',
  'MAX_QUERY_TOKENS',
  'MAX_QUERY_ALIASES',
  'MAX_FULL_READS_PER_REQUEST',
  'MAX_REFUSALS_PER_MINUTE',
  'HEADERS_TIMEOUT_MS',
  'BODY_TIMEOUT_MS',
  'BODY_MIN_BYTES_PER_SECOND',
  'KEEP_ALIVE_TIMEOUT_MS',
  'MAX_SUBSCRIPTIONS',
  'MAX_SUBSCRIPTIONS_PER_PRINCIPAL',
  'MAX_CONNECTIONS_PER_SOURCE',
  'SUBSCRIPTION_IDLE_MS',
  'SUBSCRIPTION_BUFFER',
  'SUBSCRIPTION_BUFFER_BYTES',
  'SUBSCRIPTION_KEEPALIVE_MS',
]);

/**
 * Turns the raw environment into an {@link Environment}. Empty strings count as unset;
 * integers must be written as plain decimal digits ("1e3" or "12abc" are refused).
 */
export function validateEnvironment(raw: Record<string, unknown>): Environment {
  // Every field, optional ones included, is an own property (ES2022 class fields).
  const known = Object.keys(new Environment());
  const plain: Record<string, unknown> = {};
  for (const key of known) {
    const value = raw[key];
    if (value === undefined || value === '') continue;
    if (INTEGER_KEYS.has(key) && typeof value === 'string') {
      if (!/^\s*\d+\s*$/.test(value)) {
        throw new InvalidEnvironmentError(`${key} must be a whole number (got "${value}")`);
      }
      plain[key] = Number(value);
    } else {
      plain[key] = value;
    }
  }
  const environment = plainToInstance(Environment, plain);
  const errors = validateSync(environment, { skipMissingProperties: false });
  if (errors.length > 0) {
    const first = errors[0];
    const reason = Object.values(first.constraints ?? {})[0] ?? 'is invalid';
    const message = reason.startsWith(first.property) ? reason : `${first.property} ${reason}`;
    throw new InvalidEnvironmentError(message);
  }
  if (environment.MAX_BODY_BYTES < environment.MAX_MESSAGE_BYTES + BODY_ROOM_BYTES) {
    throw new InvalidEnvironmentError(
      `MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES + ${BODY_ROOM_BYTES} bytes ` +
        `(${environment.MAX_MESSAGE_BYTES + BODY_ROOM_BYTES}); got ${environment.MAX_BODY_BYTES}`,
    );
  }
  if (environment.LISTEN_HEARTBEAT_DEADLINE_MS <= environment.LISTEN_HEARTBEAT_MS) {
    throw new InvalidEnvironmentError(
      `LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS ` +
        `(${environment.LISTEN_HEARTBEAT_MS}); got ${environment.LISTEN_HEARTBEAT_DEADLINE_MS}`,
    );
  }
  const leastResponse = leastResponseBytes(environment);
  if (
    environment.MAX_RESPONSE_BYTES !== undefined &&
    environment.MAX_RESPONSE_BYTES < leastResponse
  ) {
    throw new InvalidEnvironmentError(
      `MAX_RESPONSE_BYTES must be at least MAX_BODY_BYTES + MAX_PAGE_BYTES + MAX_MESSAGE_BYTES ` +
        `(${leastResponse}), so that one mutation and one page always fit; got ${environment.MAX_RESPONSE_BYTES}`,
    );
  }
  for (const key of ['MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 'MAX_CONNECTIONS_PER_SOURCE'] as const) {
    const value = environment[key];
    if (value !== undefined && value > environment.MAX_SUBSCRIPTIONS) {
      throw new InvalidEnvironmentError(
        `${key} must be at most MAX_SUBSCRIPTIONS (${environment.MAX_SUBSCRIPTIONS}); got ${value}`,
      );
    }
  }
  checkTrustProxy(environment.TRUST_PROXY);
  corsOriginsOf(environment.CORS_ORIGINS);
  return environment;
}

/**
 * The smallest MAX_RESPONSE_BYTES allowed: what one mutation can echo of its body, one page and
 * one item past it, so that an honest request is never refused for its size alone.
 */
export function leastResponseBytes(environment: Environment): number {
  return environment.MAX_BODY_BYTES + environment.MAX_PAGE_BYTES + environment.MAX_MESSAGE_BYTES;
}

/** MAX_RESPONSE_BYTES, or its default: a few pages, never less than leastResponseBytes. */
export function maxResponseBytesOf(environment: Environment): number {
  return (
    environment.MAX_RESPONSE_BYTES ??
    Math.max(4 * environment.MAX_PAGE_BYTES, leastResponseBytes(environment))
  );
}
