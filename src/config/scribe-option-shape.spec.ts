import { runInNewContext } from 'node:vm';
import { validateEnvironment } from './environment.js';
import { resolveScribeConfig } from './resolve-scribe-config.js';
import { ScribeConfig } from './scribe-config.js';
import { SCRIBE_OPTION_TABLE, setOptionAt } from './scribe-option-table.js';
import { type ScribeOptions } from './scribe-options.js';
import {
  scribeOptionsFromEnvironment,
  serveSettingsFromEnvironment,
} from './scribe-options-from-environment.js';
import { optionsRefusal } from './testing/options-refusal.js';

// Beside scribe-options.spec.ts: the shape check, how each kind of option crosses to and from
// its variable, and how a variable's refusal is reworded for the option.

const refusal = optionsRefusal;

describe('the shape of ScribeOptions', () => {
  it.each([
    [null, 'null'],
    [[], 'an array'],
    ['dataDir=x', 'string'],
    [undefined, 'undefined'],
    [new Date(0), 'object'],
  ])('refuses %p for the options, naming the root', (options, got) => {
    expect(refusal(options).message).toBe(
      `Invalid Scribe option (root): must be an object (got ${got})`,
    );
  });

  it('takes an object of no prototype, or of another realm, as plain', () => {
    const bare = Object.assign(Object.create(null) as object, { development: true });
    expect(resolveScribeConfig(bare as ScribeOptions).development).toBe(true);
    const foreign = runInNewContext('({ limits: { maxPageBytes: 70000 } })') as ScribeOptions;
    expect(resolveScribeConfig(foreign).maxPageBytes).toBe(70_000);
  });

  it('skips a group or an option given as undefined', () => {
    expect(resolveScribeConfig({ limits: undefined, dataDir: undefined })).toEqual(
      resolveScribeConfig({}),
    );
  });

  it.each([
    [null, 'null'],
    [['a'], 'an array'],
    [new Date(0), 'object'],
  ])('refuses %p for a group', (group, got) => {
    expect(refusal({ http: group }).message).toBe(
      `Invalid Scribe option http: must be an object (got ${got})`,
    );
  });

  it('refuses a group name given deeper, or an option given at the root', () => {
    expect(refusal({ http: { http: {} } }).message).toBe(
      'Invalid Scribe option http.http: is not a Scribe option',
    );
    expect(refusal({ maxPageBytes: 70_000 }).message).toBe(
      'Invalid Scribe option maxPageBytes: is not a Scribe option',
    );
  });

  // validateEnvironment reads '' as unset: the default './data' would have been used silently,
  // and ' ' made a directory named ' '.
  it.each([
    ['dataDir', ''],
    ['dataDir', ' '],
    ['dataDir', '\t \n'],
    ['spoolDir', ''],
    ['spoolDir', '  '],
  ])('refuses %s %p: it names no directory', (path, value) => {
    const error = refusal({ [path]: value });
    expect(error.path).toBe(path);
    expect(error.message).toBe(
      `Invalid Scribe option ${path}: must name a directory, not be empty or only spaces (got ${JSON.stringify(value)})`,
    );
  });

  it.each(['DATA_DIR', 'SPOOL_DIR'])('refuses %s of only spaces, naming it', (variable) => {
    expect(() => validateEnvironment({ [variable]: '  ' })).toThrow(
      `${variable} must name a directory, not be empty or only spaces`,
    );
    // Empty is unset, as for every variable: the default.
    expect(() => validateEnvironment({ [variable]: '' })).not.toThrow();
  });

  // Every option of a string but the directories: '' would have meant the default silently
  // (SQLite, anonymous access, /graphql, …), and '  ' was taken as a value.
  const STRING_PATHS = SCRIBE_OPTION_TABLE.filter(([, , kind]) =>
    ['string', 'secret', 'proxy'].includes(kind),
  ).map(([path, , kind]) => [path, kind] as const);

  it('has the string options the empty string meant a default for', () => {
    expect(STRING_PATHS.map(([path]) => path)).toEqual(
      expect.arrayContaining([
        'database.url',
        'database.sqliteSynchronous',
        'http.trustProxy',
        'auth.adminToken',
        'auth.apiTokens',
        'auth.jwtSecret',
        'graphql.path',
        'failpoint',
      ]),
    );
  });

  describe.each(STRING_PATHS)('%s (%s)', (path, kind) => {
    it.each(['', ' ', '\t\n'])('refuses %j, naming the option', (value) => {
      const options: Record<string, unknown> = {};
      setOptionAt(options, path, value);
      const error = refusal(options);
      expect(error.path).toBe(path);
      // A secret's value is never echoed, blank or not.
      const got = kind === 'secret' ? '' : ` (got ${JSON.stringify(value)})`;
      expect(error.message).toBe(
        `Invalid Scribe option ${path}: must not be empty or only spaces: leave it out for the default${got}`,
      );
    });
  });

  it.each([[['']], [['https://a.example.com', ' ']]])('refuses origins %j', (origins) => {
    expect(refusal({ http: { corsOrigins: origins } }).message).toBe(
      `Invalid Scribe option http.corsOrigins: must not list an empty value or one of only spaces (got ${JSON.stringify(origins)})`,
    );
    expect(resolveScribeConfig({ http: { corsOrigins: [] } }).corsOrigins).toEqual([]);
  });

  it.each([NaN, Infinity, -Infinity])('echoes %p as itself, not as null', (value) => {
    expect(refusal({ limits: { maxBodyBytes: value } }).message).toMatch(
      new RegExp(
        `^Invalid Scribe option limits\\.maxBodyBytes: must be an integer between \\d+ and \\d+ \\(got ${String(value)}\\)$`,
      ),
    );
  });

  it('refuses origins that are not all strings', () => {
    expect(refusal({ http: { corsOrigins: ['https://a.example.com', 5] } }).message).toBe(
      'Invalid Scribe option http.corsOrigins: must be an array of strings (got an array)',
    );
    expect(refusal({ http: { corsOrigins: 'https://a.example.com' } }).message).toBe(
      'Invalid Scribe option http.corsOrigins: must be an array of strings (got string)',
    );
  });

  it.each(['own', 'host'])('takes graphql.mode %p', (mode) => {
    expect(() => resolveScribeConfig({ graphql: { mode } } as ScribeOptions)).not.toThrow();
  });
});

describe('options as the variables they stand for', () => {
  const configOf = (env: Record<string, string>) => new ScribeConfig(validateEnvironment(env));

  it('writes booleans as true or false', () => {
    expect(resolveScribeConfig({ graphql: { introspection: false } })).toEqual(
      configOf({ GRAPHQL_INTROSPECTION: 'false' }),
    );
    expect(resolveScribeConfig({ graphql: { introspection: true } })).toEqual(
      configOf({ GRAPHQL_INTROSPECTION: 'true' }),
    );
    expect(resolveScribeConfig({ auth: { allowAnonymous: false } })).toEqual(
      configOf({ ALLOW_ANONYMOUS: 'false' }),
    );
  });

  it('writes development as NODE_ENV=development, and false as NODE_ENV unset', () => {
    expect(resolveScribeConfig({ development: true }).development).toBe(true);
    expect(resolveScribeConfig({ development: false })).toEqual(configOf({}));
  });

  it('writes a proxy count or list as TRUST_PROXY, and false as no proxy', () => {
    expect(resolveScribeConfig({ http: { trustProxy: 2 } })).toEqual(
      configOf({ TRUST_PROXY: '2' }),
    );
    expect(resolveScribeConfig({ http: { trustProxy: 'loopback, 10.0.0.0/8' } })).toEqual(
      configOf({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }),
    );
    expect(resolveScribeConfig({ http: { trustProxy: false } })).toEqual(configOf({}));
  });

  it('joins origins with commas', () => {
    expect(
      resolveScribeConfig({ http: { corsOrigins: ['https://a.example.com', 'http://b:8080'] } }),
    ).toEqual(configOf({ CORS_ORIGINS: 'https://a.example.com,http://b:8080' }));
  });

  it("rewords a variable's rule in the option's names, starting in lower case", () => {
    expect(refusal({ http: { trustProxy: 'not an address' } }).message).toBe(
      'Invalid Scribe option http.trustProxy: must be a number of proxies or a comma-separated list of addresses, subnets or loopback, linklocal, uniquelocal (got "not an address")',
    );
  });

  it('does not echo a secret even where the rule would, nor a second got', () => {
    const error = refusal({ database: { url: 'mysql://user:hunter2@db' } });
    expect(error.message).toBe(
      'Invalid Scribe option database.url: must be a postgres:// or postgresql:// URL',
    );
  });
});

describe('options of the environment, by kind', () => {
  it('reads booleans, development and a proxy list as their options', () => {
    expect(
      scribeOptionsFromEnvironment({
        ALLOW_ANONYMOUS: 'false',
        GRAPHQL_INTROSPECTION: 'true',
        NODE_ENV: 'production',
        TRUST_PROXY: 'loopback',
      }),
    ).toMatchObject({
      auth: { allowAnonymous: false },
      graphql: { introspection: true },
      development: false,
      http: { trustProxy: 'loopback', guardAllPaths: true },
    });
  });

  it('reads an empty variable as unset, as ever, and refuses one of only spaces', () => {
    const empty = Object.fromEntries(
      SCRIBE_OPTION_TABLE.flatMap(([, variable]) => (variable ? [[variable, '']] : [])),
    );
    expect(scribeOptionsFromEnvironment(empty)).toEqual(scribeOptionsFromEnvironment({}));
    expect(() => scribeOptionsFromEnvironment({ JWT_ISSUER: '  ' })).toThrow(
      'JWT_ISSUER must not be only spaces: leave it empty or unset for the default',
    );
    expect(() => scribeOptionsFromEnvironment({ ADMIN_TOKEN: ' ' })).toThrow(
      /^ADMIN_TOKEN must not be only spaces/,
    );
  });

  it('sets no option for a variable unset that has no default', () => {
    const options = scribeOptionsFromEnvironment({});
    expect(Object.keys(options.http ?? {})).not.toContain('trustProxy');
    expect(Object.keys(options.http ?? {})).not.toContain('corsOrigins');
    expect(Object.keys(options.auth ?? {})).toEqual(['jwtJwksCooldownMs', 'allowAnonymous']);
    expect(Object.keys(options)).not.toContain('development');
    expect(Object.keys(options)).not.toContain('failpoint');
  });

  it('keeps a number of proxies a number', () => {
    expect(scribeOptionsFromEnvironment({ TRUST_PROXY: '0' }).http?.trustProxy).toBe(0);
  });

  it('serves on loopback by default, anonymous callers not forced', () => {
    expect(serveSettingsFromEnvironment({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      logLevel: 'log',
      logFormat: 'text',
      anonymousForced: false,
    });
  });
});
