import { isAbsolute, join, resolve } from 'node:path';
import { validateEnvironment } from './environment.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';
import { ScribeConfig } from './scribe-config.js';
import { refusal } from './testing/environment-fixtures.js';

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

  describe('CORS_ALLOWED_HEADERS', () => {
    it.each([
      '*',
      'x-*',
      'Cookie',
      'host',
      'Sec-Fetch-Mode',
      'proxy-authorization',
      'access-control-allow-origin',
    ])('refuses %p: no wildcard, and nothing the browser keeps from pages', (value) => {
      expect(refusal({ CORS_ALLOWED_HEADERS: `x-trace-id, ${value}` }).message).toBe(
        `CORS_ALLOWED_HEADERS must name headers a page may send: not * (any header) nor one the browser sets itself; got ${JSON.stringify(value)}`,
      );
    });

    it('lists no header when unset or blank', () => {
      expect(ScribeConfig.fromVariables({}).corsAllowedHeaders).toEqual([]);
      expect(ScribeConfig.fromVariables({ CORS_ALLOWED_HEADERS: ' ' }).corsAllowedHeaders).toEqual(
        [],
      );
    });

    it('takes a comma list of header names, trimmed and lower-cased', () => {
      expect(
        ScribeConfig.fromVariables({ CORS_ALLOWED_HEADERS: 'X-Trace-Id, x-tenant' })
          .corsAllowedHeaders,
      ).toEqual(['x-trace-id', 'x-tenant']);
      expect(
        ScribeConfig.fromVariables({ CORS_ALLOWED_HEADERS: "a!#$%&'+.^_`|~9" }).corsAllowedHeaders,
      ).toEqual(["a!#$%&'+.^_`|~9"]);
    });

    it.each(['x trace', 'x-a,,x-b', 'x-a;x-b', 'x:y', '"x"', 'x\u00e9', '(x)'])(
      'refuses %p, in one line naming the variable',
      (value) => {
        expect(refusal({ CORS_ALLOWED_HEADERS: value }).message).toBe(
          `CORS_ALLOWED_HEADERS must list header names such as x-trace-id (comma-separated); got ${JSON.stringify(
            value
              .split(',')
              .find((entry) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(entry.trim()))
              ?.trim(),
          )}`,
        );
      },
    );
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
