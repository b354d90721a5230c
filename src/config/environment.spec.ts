import { isAbsolute, join, resolve } from 'node:path';
import {
  BODY_ROOM_BYTES,
  InvalidEnvironmentError,
  LOG_LEVELS,
  SQLITE_SYNCHRONOUS_MODES,
  validateEnvironment,
} from './environment.js';
import { ScribeConfig } from './scribe-config.js';

const DEFAULTS = {
  PORT: 3000,
  HOST: '127.0.0.1',
  DATA_DIR: './data',
  DATABASE_URL: undefined,
  SPOOL_DIR: undefined,
  SQLITE_SYNCHRONOUS: 'FULL',
  MAX_PENDING_PER_SESSION: 200,
  DB_RETRY_INTERVAL_MS: 1000,
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
  MAX_REFUSALS_PER_MINUTE: 60,
  HEADERS_TIMEOUT_MS: 10_000,
  BODY_TIMEOUT_MS: 10_000,
  BODY_MIN_BYTES_PER_SECOND: 65_536,
  KEEP_ALIVE_TIMEOUT_MS: 5000,
  MAX_SUBSCRIPTIONS: 1000,
  MAX_SUBSCRIPTIONS_PER_PRINCIPAL: undefined,
  MAX_CONNECTIONS_PER_SOURCE: undefined,
  SUBSCRIPTION_IDLE_MS: 20_000,
  SUBSCRIPTION_BUFFER: 256,
  SUBSCRIPTION_BUFFER_BYTES: 16 * 1024 * 1024,
  SUBSCRIPTION_KEEPALIVE_MS: 12_000,
  TRUST_PROXY: undefined,
  CORS_ORIGINS: undefined,
  ADMIN_TOKEN: undefined,
  API_TOKENS: undefined,
  JWT_SECRET: undefined,
  JWT_PUBLIC_KEY: undefined,
  JWT_ISSUER: undefined,
  JWT_AUDIENCE: undefined,
  ALLOW_ANONYMOUS: 'false',
  LOG_LEVEL: 'log',
  GRAPHQL_INTROSPECTION: undefined,
  NODE_ENV: undefined,
  SCRIBE_FAILPOINT: undefined,
};

const INTEGER_VARIABLES = [
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
] as const;

/** The error validateEnvironment throws for `raw`; fails the test when it throws none. */
function refusal(raw: Record<string, unknown>): InvalidEnvironmentError {
  try {
    validateEnvironment(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidEnvironmentError);
    return error as InvalidEnvironmentError;
  }
  throw new Error(`validateEnvironment accepted ${JSON.stringify(raw)}`);
}

describe(validateEnvironment.name, () => {
  it('gives every default for an empty environment', () => {
    const environment = validateEnvironment({});

    expect({ ...environment }).toStrictEqual(DEFAULTS);
  });

  it('treats empty strings as unset', () => {
    const allEmpty = Object.fromEntries(Object.keys(DEFAULTS).map((key) => [key, '']));

    const environment = validateEnvironment(allEmpty);

    expect({ ...environment }).toStrictEqual(DEFAULTS);
  });

  it('reads set values, integers as numbers', () => {
    const environment = validateEnvironment({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/scribe',
      SPOOL_DIR: '/var/spool/scribe',
      SQLITE_SYNCHRONOUS: 'NORMAL',
      MAX_PENDING_PER_SESSION: '5',
      DB_RETRY_INTERVAL_MS: '0',
      SESSION_RESOLVE_CONCURRENCY: '64',
      SESSION_RESOLVE_TIMEOUT_MS: '250',
      SESSION_CACHE_SIZE: '0',
      MAX_MESSAGE_BYTES: '1000',
      MAX_BODY_BYTES: '200000',
      ADMIN_TOKEN: 'secret',
      LOG_LEVEL: 'debug',
      NODE_ENV: 'production',
    });

    expect(environment).toMatchObject({
      PORT: 8080,
      HOST: '0.0.0.0',
      DATA_DIR: '/var/lib/scribe',
      SPOOL_DIR: '/var/spool/scribe',
      SQLITE_SYNCHRONOUS: 'NORMAL',
      MAX_PENDING_PER_SESSION: 5,
      DB_RETRY_INTERVAL_MS: 0,
      SESSION_RESOLVE_CONCURRENCY: 64,
      SESSION_RESOLVE_TIMEOUT_MS: 250,
      SESSION_CACHE_SIZE: 0,
      MAX_MESSAGE_BYTES: 1000,
      MAX_BODY_BYTES: 200000,
      ADMIN_TOKEN: 'secret',
      LOG_LEVEL: 'debug',
      NODE_ENV: 'production',
    });
  });

  it('ignores variables it does not know', () => {
    const environment = validateEnvironment({
      PATH: '/usr/bin',
      PORT_NUMBER: 'not a number',
      port: 'lowercase is another variable',
      log_level: 'shouting',
    });

    expect({ ...environment }).toStrictEqual(DEFAULTS);
  });

  describe('integers', () => {
    const notDigits = ['12abc', '1e3', '-1', '1.5', '0x10', '+5', 'abc', ' '];

    it.each(INTEGER_VARIABLES.flatMap((key) => notDigits.map((value) => [key, value])))(
      'refuses %s=%j with one line naming the variable',
      (key, value) => {
        const error = refusal({ [key]: value });

        expect(error.message).toBe(`${key} must be a whole number (got "${value}")`);
        expect(error.message).not.toContain('\n');
      },
    );

    it.each(INTEGER_VARIABLES)('leaves %s at its default when set to the empty string', (key) => {
      expect(validateEnvironment({ [key]: '' })[key]).toBe(DEFAULTS[key]);
    });
  });

  describe('bounds', () => {
    it.each([
      ['PORT', '65536', 'PORT must not be greater than 65535'],
      ['SESSION_RESOLVE_CONCURRENCY', '0', 'SESSION_RESOLVE_CONCURRENCY must not be less than 1'],
      [
        'SESSION_RESOLVE_CONCURRENCY',
        '65',
        'SESSION_RESOLVE_CONCURRENCY must not be greater than 64',
      ],
      ['MAX_PENDING_PER_SESSION', '0', 'MAX_PENDING_PER_SESSION must not be less than 1'],
      ['MAX_PAGE_BYTES', '65535', 'MAX_PAGE_BYTES must not be less than 65536'],
      ['MAX_PAGE_BYTES', '1073741825', 'MAX_PAGE_BYTES must not be greater than 1073741824'],
      [
        'MAX_REFUSALS_PER_MINUTE',
        '1000001',
        'MAX_REFUSALS_PER_MINUTE must not be greater than 1000000',
      ],
      [
        'MAX_REFUSALS_PER_MINUTE',
        '-1',
        'MAX_REFUSALS_PER_MINUTE must be a whole number (got "-1")',
      ],
      ['HEADERS_TIMEOUT_MS', '99', 'HEADERS_TIMEOUT_MS must not be less than 100'],
      ['HEADERS_TIMEOUT_MS', '600001', 'HEADERS_TIMEOUT_MS must not be greater than 600000'],
      ['BODY_TIMEOUT_MS', '99', 'BODY_TIMEOUT_MS must not be less than 100'],
      ['BODY_TIMEOUT_MS', '600001', 'BODY_TIMEOUT_MS must not be greater than 600000'],
      ['BODY_MIN_BYTES_PER_SECOND', '1023', 'BODY_MIN_BYTES_PER_SECOND must not be less than 1024'],
      [
        'BODY_MIN_BYTES_PER_SECOND',
        '1073741825',
        'BODY_MIN_BYTES_PER_SECOND must not be greater than 1073741824',
      ],
      ['KEEP_ALIVE_TIMEOUT_MS', '99', 'KEEP_ALIVE_TIMEOUT_MS must not be less than 100'],
      ['KEEP_ALIVE_TIMEOUT_MS', '600001', 'KEEP_ALIVE_TIMEOUT_MS must not be greater than 600000'],
    ])('refuses %s=%s', (key, value, message) => {
      const error = refusal({ [key]: value });

      expect(error.message).toBe(message);
    });

    it.each([
      ['PORT', '65535', 65535],
      ['PORT', '0', 0],
      ['SESSION_RESOLVE_CONCURRENCY', '1', 1],
      ['SESSION_RESOLVE_CONCURRENCY', '64', 64],
      ['MAX_PENDING_PER_SESSION', '1', 1],
      ['MAX_PAGE_BYTES', '65536', 65536],
      ['MAX_PAGE_BYTES', '1073741824', 1073741824],
      ['MAX_REFUSALS_PER_MINUTE', '0', 0],
      ['MAX_REFUSALS_PER_MINUTE', '1000000', 1000000],
      ['HEADERS_TIMEOUT_MS', '100', 100],
      ['BODY_TIMEOUT_MS', '600000', 600000],
      ['BODY_MIN_BYTES_PER_SECOND', '1024', 1024],
      ['KEEP_ALIVE_TIMEOUT_MS', '100', 100],
    ])('accepts %s=%s at the edge', (key, value, expected) => {
      expect(validateEnvironment({ [key]: value })).toMatchObject({ [key]: expected });
    });
  });

  describe('DATABASE_URL', () => {
    it.each(['postgres://scribe:pw@db:5432/scribe', 'postgresql://localhost/scribe'])(
      'accepts %s',
      (url) => {
        expect(validateEnvironment({ DATABASE_URL: url }).DATABASE_URL).toBe(url);
      },
    );

    it.each([
      'mysql://localhost/scribe',
      'postgres:/localhost/scribe',
      'postgres://',
      'http://postgres://localhost/scribe',
      'sqlite:///data/scribe.sqlite',
      'postgres://host/db with spaces',
    ])('refuses %s', (url) => {
      expect(refusal({ DATABASE_URL: url }).message).toBe(
        'DATABASE_URL must be a postgres:// or postgresql:// URL',
      );
    });
  });

  describe('listed values', () => {
    it.each(LOG_LEVELS)('accepts LOG_LEVEL=%s', (level) => {
      expect(validateEnvironment({ LOG_LEVEL: level }).LOG_LEVEL).toBe(level);
    });

    it.each(['info', 'LOG', 'trace', 'warning'])('refuses LOG_LEVEL=%s', (level) => {
      const error = refusal({ LOG_LEVEL: level });

      expect(error.message).toMatch(/^LOG_LEVEL must be one of the following values: /);
      expect(error.message).toContain(LOG_LEVELS.join(', '));
    });

    it.each(SQLITE_SYNCHRONOUS_MODES)('accepts SQLITE_SYNCHRONOUS=%s', (mode) => {
      expect(validateEnvironment({ SQLITE_SYNCHRONOUS: mode }).SQLITE_SYNCHRONOUS).toBe(mode);
    });

    it.each(['OFF', 'EXTRA', 'full', 'normal', '2'])('refuses SQLITE_SYNCHRONOUS=%s', (mode) => {
      expect(refusal({ SQLITE_SYNCHRONOUS: mode }).message).toMatch(
        /^SQLITE_SYNCHRONOUS must be one of the following values: FULL, NORMAL$/,
      );
    });
  });

  describe('SCRIBE_FAILPOINT (test-only)', () => {
    it.each(['journal.torn-write', 'spool.drain-committed@3'])('accepts %s', (failpoint) => {
      expect(validateEnvironment({ SCRIBE_FAILPOINT: failpoint }).SCRIBE_FAILPOINT).toBe(failpoint);
    });

    it.each(['Journal', 'journal@0', 'journal@', '@2', 'journal torn'])(
      'refuses %s',
      (failpoint) => {
        expect(refusal({ SCRIBE_FAILPOINT: failpoint }).message).toBe(
          'SCRIBE_FAILPOINT must be a failpoint name, optionally followed by @n',
        );
      },
    );
  });

  describe('MAX_BODY_BYTES', () => {
    it('must leave room for the query around the largest message', () => {
      const error = refusal({
        MAX_MESSAGE_BYTES: '1000',
        MAX_BODY_BYTES: String(1000 + BODY_ROOM_BYTES - 1),
      });

      expect(BODY_ROOM_BYTES).toBe(65536);
      expect(error.message).toContain('MAX_BODY_BYTES');
      expect(error.message).toContain('MAX_MESSAGE_BYTES');
      expect(error.message).toBe(
        `MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES + 65536 bytes (66536); got 66535`,
      );
      expect(error.message).not.toContain('\n');
    });

    it('accepts exactly MAX_MESSAGE_BYTES + 65536', () => {
      const environment = validateEnvironment({
        MAX_MESSAGE_BYTES: '1000',
        MAX_BODY_BYTES: '66536',
      });

      expect(environment.MAX_BODY_BYTES).toBe(66536);
    });

    it('checks the default body limit against a raised message limit', () => {
      const error = refusal({ MAX_MESSAGE_BYTES: String(16 * 1024 * 1024) });

      expect(error.message).toMatch(/^MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES/);
    });
  });

  describe('MAX_RESPONSE_BYTES', () => {
    const small = { MAX_PAGE_BYTES: '65536', MAX_MESSAGE_BYTES: '1000', MAX_BODY_BYTES: '66536' };

    it('must hold one mutation and one page: body + page + message', () => {
      const error = refusal({ ...small, MAX_RESPONSE_BYTES: String(66536 + 65536 + 1000 - 1) });

      expect(error.message).toBe(
        'MAX_RESPONSE_BYTES must be at least MAX_BODY_BYTES + MAX_PAGE_BYTES + MAX_MESSAGE_BYTES (133072), so that one mutation and one page always fit; got 133071',
      );
      const least = validateEnvironment({ ...small, MAX_RESPONSE_BYTES: '133072' });
      expect(least.MAX_RESPONSE_BYTES).toBe(133072);
    });

    it('defaults to four pages, or to the least allowed when that is more', () => {
      expect(ScribeConfig.fromVariables({}).responseLimits.maxBytes).toBe(32 * 1024 * 1024);
      expect(
        ScribeConfig.fromVariables({ MAX_PAGE_BYTES: String(1024 * 1024) }).responseLimits.maxBytes,
      ).toBe(16 * 1024 * 1024 + 1024 * 1024 + 1024 * 1024);
      expect(ScribeConfig.fromVariables(small).responseLimits).toEqual({
        maxBytes: 4 * 65536,
        largeBytes: 65536,
        maxLarge: 2,
        slotTimeoutMs: 10_000,
      });
    });

    it('bounds MAX_LARGE_RESPONSES to 1..64', () => {
      expect(refusal({ MAX_LARGE_RESPONSES: '0' }).message).toMatch(/^MAX_LARGE_RESPONSES/);
      expect(refusal({ MAX_LARGE_RESPONSES: '65' }).message).toMatch(/^MAX_LARGE_RESPONSES/);
    });
  });

  describe('LISTEN_HEARTBEAT_MS and LISTEN_HEARTBEAT_DEADLINE_MS', () => {
    it.each([
      ['LISTEN_HEARTBEAT_MS', '99', 'LISTEN_HEARTBEAT_MS must not be less than 100'],
      ['LISTEN_HEARTBEAT_MS', '600001', 'LISTEN_HEARTBEAT_MS must not be greater than 600000'],
      [
        'LISTEN_HEARTBEAT_DEADLINE_MS',
        '199',
        'LISTEN_HEARTBEAT_DEADLINE_MS must not be less than 200',
      ],
      [
        'LISTEN_HEARTBEAT_DEADLINE_MS',
        '3600001',
        'LISTEN_HEARTBEAT_DEADLINE_MS must not be greater than 3600000',
      ],
    ])('refuses %s=%s', (key, value, message) => {
      expect(refusal({ [key]: value }).message).toBe(message);
    });

    it('accepts each at its edges', () => {
      expect(
        validateEnvironment({ LISTEN_HEARTBEAT_MS: '100', LISTEN_HEARTBEAT_DEADLINE_MS: '200' }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 100, LISTEN_HEARTBEAT_DEADLINE_MS: 200 });
      expect(
        validateEnvironment({
          LISTEN_HEARTBEAT_MS: '600000',
          LISTEN_HEARTBEAT_DEADLINE_MS: '3600000',
        }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 600000, LISTEN_HEARTBEAT_DEADLINE_MS: 3600000 });
    });

    it('needs a deadline longer than the interval, by a millisecond at least', () => {
      expect(
        refusal({ LISTEN_HEARTBEAT_MS: '5000', LISTEN_HEARTBEAT_DEADLINE_MS: '5000' }).message,
      ).toBe(
        'LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS (5000); got 5000',
      );
      expect(refusal({ LISTEN_HEARTBEAT_MS: '7000' }).message).toBe(
        'LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS (7000); got 6000',
      );
      expect(
        validateEnvironment({ LISTEN_HEARTBEAT_MS: '5000', LISTEN_HEARTBEAT_DEADLINE_MS: '5001' }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 5000, LISTEN_HEARTBEAT_DEADLINE_MS: 5001 });
    });
  });

  describe('MAX_SUBSCRIPTIONS_PER_PRINCIPAL and MAX_CONNECTIONS_PER_SOURCE', () => {
    it.each(['MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 'MAX_CONNECTIONS_PER_SOURCE'])(
      '%s may be MAX_SUBSCRIPTIONS, not more',
      (key) => {
        expect(validateEnvironment({ MAX_SUBSCRIPTIONS: '50', [key]: '50' })).toMatchObject({
          [key]: 50,
        });
        expect(refusal({ MAX_SUBSCRIPTIONS: '50', [key]: '51' }).message).toBe(
          `${key} must be at most MAX_SUBSCRIPTIONS (50); got 51`,
        );
        expect(refusal({ [key]: '0' }).message).toBe(`${key} must not be less than 1`);
      },
    );

    it('refuses a SUBSCRIPTION_IDLE_MS below 100', () => {
      expect(refusal({ SUBSCRIPTION_IDLE_MS: '99' }).message).toBe(
        'SUBSCRIPTION_IDLE_MS must not be less than 100',
      );
    });
  });
});

describe(ScribeConfig.name, () => {
  describe(ScribeConfig.fromVariables.name, () => {
    it('resolves DATA_DIR to an absolute path', () => {
      const config = ScribeConfig.fromVariables({ DATA_DIR: 'relative/data' });

      expect(isAbsolute(config.dataDir)).toBe(true);
      expect(config.dataDir).toBe(resolve(process.cwd(), 'relative/data'));
    });

    it('defaults DATA_DIR to ./data, absolute', () => {
      expect(ScribeConfig.fromVariables({}).dataDir).toBe(resolve(process.cwd(), 'data'));
    });

    it('puts the spool in DATA_DIR/pending_messages unless SPOOL_DIR is set', () => {
      const config = ScribeConfig.fromVariables({ DATA_DIR: '/srv/scribe' });

      expect(config.spoolDir).toBe(join('/srv/scribe', 'pending_messages'));
    });

    it('takes SPOOL_DIR when set, resolved absolute', () => {
      const config = ScribeConfig.fromVariables({ DATA_DIR: '/srv/scribe', SPOOL_DIR: 'spool' });

      expect(config.spoolDir).toBe(resolve(process.cwd(), 'spool'));
    });

    it('uses SQLite in DATA_DIR when DATABASE_URL is unset', () => {
      const config = ScribeConfig.fromVariables({
        DATA_DIR: '/srv/scribe',
        SQLITE_SYNCHRONOUS: 'NORMAL',
      });

      expect(config.database).toEqual({
        kind: 'sqlite',
        path: join('/srv/scribe', 'scribe.sqlite'),
        synchronous: 'NORMAL',
      });
    });

    it('switches to PostgreSQL when DATABASE_URL is set', () => {
      const url = 'postgresql://scribe@db/scribe';

      expect(ScribeConfig.fromVariables({ DATABASE_URL: url }).database).toEqual({
        kind: 'postgres',
        url,
      });
    });

    it('gives the commit feed its heartbeat settings', () => {
      expect(ScribeConfig.fromVariables({}).listenHeartbeat).toEqual({
        intervalMs: 2000,
        deadlineMs: 6000,
      });
      expect(
        ScribeConfig.fromVariables({
          LISTEN_HEARTBEAT_MS: '250',
          LISTEN_HEARTBEAT_DEADLINE_MS: '900',
        }).listenHeartbeat,
      ).toEqual({ intervalMs: 250, deadlineMs: 900 });
    });

    it.each([
      ['unset', undefined],
      ['empty', ''],
    ])('has no admin token when ADMIN_TOKEN is %s', (_, value) => {
      expect(ScribeConfig.fromVariables({ ADMIN_TOKEN: value }).access.tokens).toEqual([]);
    });

    it('keeps a set ADMIN_TOKEN as a token with the admin scope', () => {
      expect(ScribeConfig.fromVariables({ ADMIN_TOKEN: 's3cret' }).access.tokens).toEqual([
        { token: 's3cret', scopes: new Set(['admin']) },
      ]);
    });

    it('is in development only when NODE_ENV is development', () => {
      expect(ScribeConfig.fromVariables({ NODE_ENV: 'development' }).development).toBe(true);
      expect(ScribeConfig.fromVariables({ NODE_ENV: 'production' }).development).toBe(false);
      expect(ScribeConfig.fromVariables({}).development).toBe(false);
    });

    it('throws InvalidEnvironmentError for a bad variable', () => {
      expect(() => ScribeConfig.fromVariables({ PORT: 'eighty' })).toThrow(InvalidEnvironmentError);
    });
  });

  describe('GRAPHQL_INTROSPECTION', () => {
    it('follows NODE_ENV when unset: on in development only', () => {
      expect(ScribeConfig.fromVariables({}).introspection).toBe(false);
      expect(ScribeConfig.fromVariables({ NODE_ENV: 'production' }).introspection).toBe(false);
      expect(ScribeConfig.fromVariables({ NODE_ENV: 'development' }).introspection).toBe(true);
    });

    it('overrides NODE_ENV either way when set', () => {
      expect(ScribeConfig.fromVariables({ GRAPHQL_INTROSPECTION: 'true' }).introspection).toBe(
        true,
      );
      expect(
        ScribeConfig.fromVariables({ GRAPHQL_INTROSPECTION: 'false', NODE_ENV: 'development' })
          .introspection,
      ).toBe(false);
    });

    it('refuses anything but true and false', () => {
      expect(refusal({ GRAPHQL_INTROSPECTION: 'yes' }).message).toMatch(/^GRAPHQL_INTROSPECTION/);
    });
  });

  describe('CORS_ORIGINS', () => {
    it('lists no origin when unset or blank', () => {
      expect(ScribeConfig.fromVariables({}).corsOrigins).toEqual([]);
      expect(ScribeConfig.fromVariables({ CORS_ORIGINS: ' ' }).corsOrigins).toEqual([]);
    });

    it('takes a comma list of origins, spaces trimmed', () => {
      expect(
        ScribeConfig.fromVariables({
          CORS_ORIGINS: 'https://chat.example.com, http://localhost:5173',
        }).corsOrigins,
      ).toEqual(['https://chat.example.com', 'http://localhost:5173']);
    });

    it.each([
      '*',
      'chat.example.com',
      'https://chat.example.com/',
      'https://chat.example.com/app',
      'https://CHAT.example.com',
      'ftp://files.example.com',
      'https://a.example.com,,https://b.example.com',
      'https://user@chat.example.com',
    ])('refuses %p, in one line naming the variable', (value) => {
      expect(refusal({ CORS_ORIGINS: value }).message).toMatch(
        /^CORS_ORIGINS must list origins such as https:\/\/chat\.example\.com /,
      );
    });
  });

  describe('live slots', () => {
    it('gives a principal and a source a tenth of MAX_SUBSCRIPTIONS each, rounded up, unless set', () => {
      expect(ScribeConfig.fromVariables({}).subscriptions).toMatchObject({
        maxSubscriptions: 1000,
        maxPerPrincipal: 100,
        maxConnectionsPerSource: 100,
        idleMs: 20_000,
      });
      expect(ScribeConfig.fromVariables({ MAX_SUBSCRIPTIONS: '15' }).subscriptions).toMatchObject({
        maxPerPrincipal: 2,
        maxConnectionsPerSource: 2,
      });
      expect(ScribeConfig.fromVariables({ MAX_SUBSCRIPTIONS: '1' }).subscriptions).toMatchObject({
        maxPerPrincipal: 1,
        maxConnectionsPerSource: 1,
      });
      const set = ScribeConfig.fromVariables({
        MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '7',
        MAX_CONNECTIONS_PER_SOURCE: '9',
        SUBSCRIPTION_IDLE_MS: '500',
      }).subscriptions;
      expect(set).toMatchObject({ maxPerPrincipal: 7, maxConnectionsPerSource: 9, idleMs: 500 });
    });
  });

  describe('TRUST_PROXY', () => {
    it.each([
      ['1', 1],
      ['loopback', 'loopback'],
      ['10.0.0.0/8, 192.168.1.1', '10.0.0.0/8, 192.168.1.1'],
      ['loopback,fc00::/7', 'loopback,fc00::/7'],
    ])('accepts %p as %p', (value, setting) => {
      expect(ScribeConfig.fromVariables({ TRUST_PROXY: value }).trustProxy).toEqual(setting);
    });

    it('trusts no proxy when unset', () => {
      expect(ScribeConfig.fromVariables({}).trustProxy).toBe(false);
      expect(ScribeConfig.fromVariables({ TRUST_PROXY: '' }).trustProxy).toBe(false);
    });

    it.each([
      'a b',
      '1;2',
      'loopback,',
      '$(x)',
      'true',
      'foo',
      '10.0.0.0/33',
      '::1/129',
      '10.0.0.1/8/1',
      '10.0.0.0/x',
      '1.2.3.4, 1.2.3',
    ])('refuses %p, in one line naming the variable', (value) => {
      expect(refusal({ TRUST_PROXY: value }).message).toBe(
        'TRUST_PROXY must be a number of proxies or a comma-separated list of addresses, subnets or loopback, linklocal, uniquelocal',
      );
    });

    it.each(['10.0.0.0/32', '::1/128', 'fc00::/7, linklocal', '2001:db8::1', '0'])(
      'accepts %p',
      (value) => {
        expect(validateEnvironment({ TRUST_PROXY: value }).TRUST_PROXY).toBe(value);
      },
    );
  });

  it('passes MAX_REFUSALS_PER_MINUTE on, 0 included', () => {
    expect(ScribeConfig.fromVariables({}).maxRefusalsPerMinute).toBe(60);
    expect(ScribeConfig.fromVariables({ MAX_REFUSALS_PER_MINUTE: '0' }).maxRefusalsPerMinute).toBe(
      0,
    );
  });

  it('derives the HTTP deadlines, a whole request bounded past the longest body', () => {
    expect(
      ScribeConfig.fromVariables({
        HEADERS_TIMEOUT_MS: '2000',
        BODY_TIMEOUT_MS: '3000',
        BODY_MIN_BYTES_PER_SECOND: '65536',
        MAX_BODY_BYTES: String(4 * 1024 * 1024),
        KEEP_ALIVE_TIMEOUT_MS: '4000',
      }).httpTimeouts,
    ).toEqual({
      headersTimeoutMs: 2000,
      bodyTimeoutMs: 3000,
      bodyMinBytesPerSecond: 65536,
      keepAliveTimeoutMs: 4000,
      // 2 s + 3 s + 64 s (4 MiB at 64 KiB/s) + 5 s.
      requestTimeoutMs: 74_000,
    });
  });
});
