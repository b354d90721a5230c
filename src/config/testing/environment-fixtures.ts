import { validateEnvironment } from '../environment.js';
import { InvalidEnvironmentError } from '../invalid-environment.error.js';

// What the environment specs share: every variable's default, the integer ones, and the
// refusal a bad environment gets.

/** Every variable validateEnvironment reads, with its default, in the order it reads them. */
export const DEFAULTS = {
  PORT: 3000,
  HOST: '127.0.0.1',
  DATA_DIR: './data',
  DATABASE_URL: undefined,
  SPOOL_DIR: undefined,
  SQLITE_SYNCHRONOUS: 'FULL',
  MAX_PENDING_PER_SESSION: 200,
  DB_RETRY_INTERVAL_MS: 1000,
  DB_IDLE_PROBE_MS: 10_000,
  LISTEN_HEARTBEAT_MS: 2000,
  LISTEN_HEARTBEAT_DEADLINE_MS: 6000,
  JOURNAL_MAX_CLOCK_AHEAD_MS: 86_400_000,
  SESSION_RESOLVE_CONCURRENCY: 2,
  SESSION_RESOLVE_TIMEOUT_MS: 10_000,
  SESSION_CACHE_SIZE: 100,
  SESSION_CACHE_MAX_BYTES: 64 * 1024 * 1024,
  MAX_PAGE_BYTES: 8 * 1024 * 1024,
  MAX_RESPONSE_BYTES: undefined,
  MAX_LARGE_RESPONSES: 2,
  MAX_MESSAGE_BYTES: 1024 * 1024,
  MAX_BODY_BYTES: 16 * 1024 * 1024,
  MAX_QUERY_BYTES: 64 * 1024,
  MAX_QUERY_TOKENS: 1000,
  MAX_QUERY_ALIASES: 30,
  MAX_FULL_READS_PER_REQUEST: 10,
  MAX_SUBSCRIPTIONS: 1000,
  MAX_SUBSCRIPTIONS_PER_PRINCIPAL: undefined,
  MAX_CONNECTIONS_PER_SOURCE: undefined,
  SUBSCRIPTION_IDLE_MS: 20_000,
  SUBSCRIPTION_BUFFER: 256,
  SUBSCRIPTION_BUFFER_BYTES: 16 * 1024 * 1024,
  SUBSCRIPTION_KEEPALIVE_MS: 12_000,
  MAX_REFUSALS_PER_MINUTE: 60,
  HEADERS_TIMEOUT_MS: 10_000,
  BODY_TIMEOUT_MS: 10_000,
  BODY_MIN_BYTES_PER_SECOND: 65_536,
  KEEP_ALIVE_TIMEOUT_MS: 5000,
  TRUST_PROXY: undefined,
  CORS_ORIGINS: undefined,
  CORS_ALLOWED_HEADERS: undefined,
  ADMIN_TOKEN: undefined,
  API_TOKENS: undefined,
  JWT_SECRET: undefined,
  JWT_PUBLIC_KEY: undefined,
  JWT_JWKS_URL: undefined,
  JWT_JWKS_COOLDOWN_MS: 30_000,
  JWT_ISSUER: undefined,
  JWT_AUDIENCE: undefined,
  ALLOW_ANONYMOUS: 'false',
  LOG_LEVEL: 'log',
  LOG_FORMAT: 'text',
  LOG_ACCESS: undefined,
  GRAPHQL_INTROSPECTION: undefined,
  GRAPHQL_PATH: '/graphql',
  ADMIN_CONSOLE_PATH: '/admin',
  NODE_ENV: undefined,
  SCRIBE_FAILPOINT: undefined,
};

export const INTEGER_VARIABLES = [
  'PORT',
  'MAX_PENDING_PER_SESSION',
  'DB_RETRY_INTERVAL_MS',
  'DB_IDLE_PROBE_MS',
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
  'JWT_JWKS_COOLDOWN_MS',
] as const;

export function refusal(raw: Record<string, unknown>): InvalidEnvironmentError {
  try {
    validateEnvironment(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidEnvironmentError);
    return error as InvalidEnvironmentError;
  }
  throw new Error(`validateEnvironment accepted ${JSON.stringify(raw)}`);
}
