import { resolve } from 'node:path';
import { Environment, validateEnvironment } from './environment.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';
import { integerBounds } from './integer-bounds.js';
import { resolveScribeConfig } from './resolve-scribe-config.js';
import { ScribeConfig } from './scribe-config.js';
import { SCRIBE_OPTION_TABLE, setOptionAt } from './scribe-option-table.js';
import { type ScribeOptions } from './scribe-options.js';
import {
  scribeOptionsFromEnvironment,
  serveSettingsFromEnvironment,
} from './scribe-options-from-environment.js';
import { optionsRefusal } from './testing/options-refusal.js';

/** The options with `value` at `path`, over `base`. */
function withOption(path: string, value: unknown, base: ScribeOptions = {}): ScribeOptions {
  const options = structuredClone(base) as Record<string, unknown>;
  setOptionAt(options, path, value);
  return options;
}

const refusal = optionsRefusal;

const INTEGER_ROWS = SCRIBE_OPTION_TABLE.filter(([, , kind]) => kind === 'integer').map(
  ([path, variable]) => [path, variable as string] as const,
);

// What makes an option's least value possible where another bounds it (checkCombinations).
const LEAST_CONTEXT: Record<string, ScribeOptions> = {
  'database.listenHeartbeatDeadlineMs': { database: { listenHeartbeatMs: 100 } },
};
// Their least values are below what another option allows whatever it is set to.
const LEAST_UNREACHABLE = new Set(['limits.maxBodyBytes', 'limits.maxResponseBytes']);

/** For each option that is not an integer: a value refused, and what the refusal says. */
const BAD_VALUES: Record<string, [value: unknown, reason: string]> = {
  dataDir: [5, 'must be a string (got number)'],
  'database.url': ['mysql://db', 'must be a postgres:// or postgresql:// URL'],
  spoolDir: [['a'], 'must be a string (got an array)'],
  'database.sqliteSynchronous': [
    'OFF',
    'must be one of the following values: FULL, NORMAL (got "OFF")',
  ],
  'http.trustProxy': [true, 'must be false, a number or a string (got boolean)'],
  'http.corsOrigins': [
    ['https://chat.example.com/'],
    'must list origins such as https://chat.example.com (scheme, host and port only, comma-separated); got "https://chat.example.com/"',
  ],
  'http.corsAllowedHeaders': [
    ['x trace'],
    'must list header names such as x-trace-id (comma-separated); got "x trace"',
  ],
  'http.guardAllPaths': ['yes', 'must be a boolean (got string)'],
  'http.serverDeadlines': [1, 'must be a boolean (got number)'],
  'auth.adminToken': [5, 'must be a string (got number)'],
  'auth.apiTokens': [
    'k1',
    'must be a comma list of token=scopes, scopes joined by + (e.g. k1=read+append,ops=admin)',
  ],
  'auth.jwtSecret': [null, 'must be a string (got null)'],
  'auth.jwtPublicKey': [5, 'must be a string (got number)'],
  'auth.jwtJwksUrl': [
    'https://idp.example.com/jwks',
    "needs auth.jwtIssuer and auth.jwtAudience (the provider's issuer and this API's audience): a provider's keys sign tokens for all its clients (got \"https://idp.example.com/jwks\")",
  ],
  'auth.jwtIssuer': [false, 'must be a string (got boolean)'],
  'auth.jwtAudience': [{}, 'must be a string (got object)'],
  'auth.allowAnonymous': ['true', 'must be a boolean (got string)'],
  'graphql.introspection': ['false', 'must be a boolean (got string)'],
  'logging.access': ['yes', 'must be a boolean (got string)'],
  'graphql.mode': ['both', "must be 'own' or 'host' (got string)"],
  'graphql.path': [
    'graphql',
    'must be one or more /segments of letters, digits and . _ ~ - such as /graphql or /api/graphql (got "graphql")',
  ],
  'adminConsole.path': [
    '/admin/',
    'must be one or more /segments of letters, digits and . _ ~ - such as /admin or /ops/admin (got "/admin/")',
  ],
  development: ['development', 'must be a boolean (got string)'],
  failpoint: ['Bad', 'must be a failpoint name, optionally followed by @n (got "Bad")'],
};

describe(resolveScribeConfig.name, () => {
  it("has an option for every variable of Environment but the listener's (PORT, HOST, LOG_LEVEL, LOG_FORMAT)", () => {
    const variables = SCRIBE_OPTION_TABLE.flatMap(([, variable]) => (variable ? [variable] : []));

    expect([...variables].sort()).toEqual(
      Object.keys(new Environment())
        .filter((key) => !['PORT', 'HOST', 'LOG_LEVEL', 'LOG_FORMAT'].includes(key))
        .sort(),
    );
    expect(new Set(SCRIBE_OPTION_TABLE.map(([path]) => path)).size).toBe(
      SCRIBE_OPTION_TABLE.length,
    );
  });

  it('gives exactly the defaults of an empty environment for {}', () => {
    const config = resolveScribeConfig({});

    expect(config).toEqual(new ScribeConfig(validateEnvironment({})));
    expect(config.dataDir).toBe(resolve('data'));
    expect(config).toMatchObject({
      graphqlPath: '/graphql',
      guardAllPaths: false,
      serverDeadlines: true,
    });
  });

  describe.each(INTEGER_ROWS)('%s (%s)', (path, variable) => {
    const bounds = integerBounds(variable);
    if (bounds === undefined) throw new Error(`${variable} has no @Min and @Max`);
    const context = LEAST_CONTEXT[path] ?? {};
    const range = `must be an integer between ${bounds.min} and ${bounds.max}`;

    it(`refuses ${bounds.min - 1}, one below its least, naming the option`, () => {
      const error = refusal(withOption(path, bounds.min - 1, context));

      expect(error.path).toBe(path);
      expect(error.message).toBe(`Invalid Scribe option ${path}: ${range} (got ${bounds.min - 1})`);
    });

    it(`refuses ${bounds.max + 1}, one above its most, and a fraction`, () => {
      expect(refusal(withOption(path, bounds.max + 1, context)).message).toBe(
        `Invalid Scribe option ${path}: ${range} (got ${bounds.max + 1})`,
      );
      expect(refusal(withOption(path, bounds.min + 0.5, context)).message).toBe(
        `Invalid Scribe option ${path}: ${range} (got ${bounds.min + 0.5})`,
      );
    });

    it('refuses a string, even of digits', () => {
      expect(refusal(withOption(path, String(bounds.min))).message).toBe(
        `Invalid Scribe option ${path}: must be a number (got string)`,
      );
    });

    if (!LEAST_UNREACHABLE.has(path)) {
      it(`accepts ${bounds.min}, its least`, () => {
        expect(() => resolveScribeConfig(withOption(path, bounds.min, context))).not.toThrow();
      });
    }
  });

  it.each(Object.entries(BAD_VALUES))('refuses a bad %s in one line', (path, [value, reason]) => {
    const error = refusal(withOption(path, value));

    expect(error.path).toBe(path);
    expect(error.message).toBe(`Invalid Scribe option ${path}: ${reason}`);
    expect(error.message).not.toContain('\n');
  });

  it('has a bad value for every option that is not an integer', () => {
    const others = SCRIBE_OPTION_TABLE.filter(([, , kind]) => kind !== 'integer').map(
      ([path]) => path,
    );

    expect(Object.keys(BAD_VALUES).sort()).toEqual(others.sort());
  });

  it('never echoes a secret', () => {
    const error = refusal({ auth: { apiTokens: 'hunter2' } });

    expect(error.message).not.toContain('hunter2');
  });

  it('names both options of a bound one sets on the other', () => {
    expect(refusal({ limits: { maxBodyBytes: 70_000 } }).message).toBe(
      'Invalid Scribe option limits.maxBodyBytes: must be at least limits.maxMessageBytes + 65536 bytes (1114112); got 70000',
    );
  });

  it('refuses unknown keys at any depth, naming them', () => {
    expect(refusal({ dataDri: './x' }).message).toBe(
      'Invalid Scribe option dataDri: is not a Scribe option',
    );
    expect(refusal({ limits: { maxBodyByte: 1 } }).message).toBe(
      'Invalid Scribe option limits.maxBodyByte: is not a Scribe option',
    );
    expect(refusal({ limits: 5 }).message).toBe(
      'Invalid Scribe option limits: must be an object (got number)',
    );
  });

  it('takes the options a host alone sets', () => {
    const config = resolveScribeConfig({ http: { guardAllPaths: true, serverDeadlines: false } });

    expect(config).toMatchObject({ guardAllPaths: true, serverDeadlines: false });
  });
});

describe(scribeOptionsFromEnvironment.name, () => {
  const RICH = {
    PORT: '8080',
    HOST: '0.0.0.0',
    DATA_DIR: '/srv/scribe',
    SPOOL_DIR: '/srv/spool',
    DATABASE_URL: 'postgresql://scribe@db/scribe',
    SQLITE_SYNCHRONOUS: 'NORMAL',
    MAX_PENDING_PER_SESSION: '7',
    DB_RETRY_INTERVAL_MS: '0',
    LISTEN_HEARTBEAT_MS: '250',
    LISTEN_HEARTBEAT_DEADLINE_MS: '900',
    JOURNAL_MAX_CLOCK_AHEAD_MS: '60000',
    SESSION_RESOLVE_CONCURRENCY: '3',
    SESSION_CACHE_SIZE: '0',
    MAX_PAGE_BYTES: '70000',
    MAX_RESPONSE_BYTES: '40000000',
    MAX_MESSAGE_BYTES: '2000',
    MAX_BODY_BYTES: '200000',
    MAX_QUERY_ALIASES: '0',
    MAX_SUBSCRIPTIONS: '50',
    MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '50',
    SUBSCRIPTION_BUFFER_BYTES: '65536',
    MAX_REFUSALS_PER_MINUTE: '0',
    HEADERS_TIMEOUT_MS: '2000',
    TRUST_PROXY: '2',
    CORS_ORIGINS: 'https://a.example.com, http://localhost:5173',
    API_TOKENS: 'k1=read+append,k2=read',
    ADMIN_TOKEN: 'ops',
    JWT_SECRET: 's'.repeat(32),
    JWT_ISSUER: 'issuer',
    JWT_AUDIENCE: 'scribe',
    LOG_LEVEL: 'debug',
    GRAPHQL_INTROSPECTION: 'false',
    GRAPHQL_PATH: '/api/graphql',
    NODE_ENV: 'development',
    SCRIBE_FAILPOINT: 'spool.write@2',
  };

  it('gives the config of the environment, through options, as it was before them', () => {
    const options = scribeOptionsFromEnvironment(RICH);

    expect(resolveScribeConfig(options)).toEqual(
      new ScribeConfig(validateEnvironment(RICH), { guardAllPaths: true, serverDeadlines: true }),
    );
    expect(options).toMatchObject({
      http: { trustProxy: 2, corsOrigins: ['https://a.example.com', 'http://localhost:5173'] },
      graphql: { path: '/api/graphql', introspection: false },
      development: true,
    });
  });

  it('guards every path: the process serves only Scribe', () => {
    expect(scribeOptionsFromEnvironment({}).http?.guardAllPaths).toBe(true);
  });

  it('still names the variable of a bad value', () => {
    expect(() => scribeOptionsFromEnvironment({ MAX_BODY_BYTES: '5' })).toThrow(
      new InvalidEnvironmentError(
        'MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES + 65536 bytes (1114112); got 5',
      ),
    );
  });

  it('refuses anonymous callers on a non-loopback HOST, as before', () => {
    expect(() => scribeOptionsFromEnvironment({ HOST: '0.0.0.0' })).toThrow(/^HOST=0\.0\.0\.0/);
    expect(
      serveSettingsFromEnvironment({ HOST: '0.0.0.0', ALLOW_ANONYMOUS: 'true', PORT: '81' }),
    ).toEqual({
      port: 81,
      host: '0.0.0.0',
      logLevel: 'log',
      logFormat: 'text',
      anonymousForced: true,
    });
  });
});
