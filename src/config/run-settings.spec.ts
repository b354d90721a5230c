import { validateEnvironment } from './environment.js';
import { resolveScribeConfig } from './resolve-scribe-config.js';
import { InvalidScribeOptionsError } from './invalid-scribe-options.error.js';
import { refusal } from './testing/environment-fixtures.js';

// GRAPHQL_PATH and graphql.path: literal segments Express matches as written, never a route of
// the whole app or one of Scribe's own. One rule for the variable and the module's option.

const SHAPE =
  'must be one or more /segments of letters, digits and . _ ~ - such as /graphql or /api/graphql';

describe('GRAPHQL_PATH', () => {
  it.each([
    ['/', 'must not be /: it would take every route of the app'],
    ['graphql', SHAPE],
    ['/graphql/', SHAPE],
    ['//graphql', SHAPE],
    ['/g*', SHAPE],
    ['/graphql?x', SHAPE],
    ['/:x', SHAPE],
    ['(a)', SHAPE],
    ['/gräph', SHAPE],
    ['#', SHAPE],
    ['/a b', SHAPE],
    ['/%61', SHAPE],
    ['/api/..', 'must not hold . or .. segments'],
    ['/./graphql', 'must not hold . or .. segments'],
    ['/health', 'must not be /health, /metrics or under them: Scribe serves those routes'],
    ['/Metrics', 'must not be /health, /metrics or under them: Scribe serves those routes'],
    ['/health/graphql', 'must not be /health, /metrics or under them: Scribe serves those routes'],
  ])('refuses %p in one line naming the variable', (path, reason) => {
    const error = refusal({ GRAPHQL_PATH: path });

    expect(error.message).toBe(`GRAPHQL_PATH ${reason} (got ${JSON.stringify(path)})`);
  });

  it.each(['/graphql', '/api/graphql', '/v1.0/g_q~l-x', '/healthz', '/metrics-graphql', '/a/.b'])(
    'accepts %p',
    (path) => {
      expect(validateEnvironment({ GRAPHQL_PATH: path }).GRAPHQL_PATH).toBe(path);
    },
  );

  it('defaults to /graphql', () => {
    expect(validateEnvironment({}).GRAPHQL_PATH).toBe('/graphql');
  });
});

describe('graphql.path', () => {
  it.each([
    ['/', 'must not be /: it would take every route of the app'],
    ['/g*', SHAPE],
    ['/graphql/..', 'must not hold . or .. segments'],
    ['/metrics/x', 'must not be /health, /metrics or under them: Scribe serves those routes'],
  ])('refuses %p with InvalidScribeOptionsError naming the option', (path, reason) => {
    const attempt = () => resolveScribeConfig({ graphql: { path } });

    expect(attempt).toThrow(InvalidScribeOptionsError);
    expect(attempt).toThrow(
      `Invalid Scribe option graphql.path: ${reason} (got ${JSON.stringify(path)})`,
    );
  });

  it('takes a path of literal segments', () => {
    expect(resolveScribeConfig({ graphql: { path: '/api/graphql' } }).graphqlPath).toBe(
      '/api/graphql',
    );
  });
});

describe('ADMIN_CONSOLE_PATH', () => {
  it('defaults to /admin, and takes another path by the same rule as GRAPHQL_PATH', () => {
    expect(validateEnvironment({}).ADMIN_CONSOLE_PATH).toBe('/admin');
    expect(validateEnvironment({ ADMIN_CONSOLE_PATH: '/ops/admin' }).ADMIN_CONSOLE_PATH).toBe(
      '/ops/admin',
    );
    expect(refusal({ ADMIN_CONSOLE_PATH: '/metrics' }).message).toBe(
      'ADMIN_CONSOLE_PATH must not be /health, /metrics or under them: Scribe serves those routes (got "/metrics")',
    );
  });

  it.each([
    ['/graphql', '/graphql'],
    ['/API', '/api/graphql'],
  ])('refuses %p beside GRAPHQL_PATH %p: the console would hide the API', (path, graphql) => {
    expect(refusal({ ADMIN_CONSOLE_PATH: path, GRAPHQL_PATH: graphql }).message).toBe(
      `ADMIN_CONSOLE_PATH must not be GRAPHQL_PATH or hold it (${graphql}); got ${path}`,
    );
  });

  it('is the module option adminConsole.path', () => {
    expect(resolveScribeConfig({ adminConsole: { path: '/console' } }).adminConsolePath).toBe(
      '/console',
    );
  });
});
