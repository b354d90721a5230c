import { validateEnvironment } from './environment.js';
import { LOG_LEVELS } from './run-settings.js';
import { SQLITE_SYNCHRONOUS_MODES } from './store-settings.js';
import { DEFAULTS, INTEGER_VARIABLES, refusal } from './testing/environment-fixtures.js';

describe(validateEnvironment.name, () => {
  it('gives every default for an empty environment', () => {
    const environment = validateEnvironment({});

    expect({ ...environment }).toStrictEqual(DEFAULTS);
  });

  it('reads the variables in the order they are declared', () => {
    expect(Object.keys(validateEnvironment({}))).toStrictEqual(Object.keys(DEFAULTS));
  });

  it('names the first of several bad variables, in that order', () => {
    expect(refusal({ SUBSCRIPTION_BUFFER: 'x', PORT: 'y' }).message).toBe(
      'PORT must be a whole number (got "y")',
    );
    expect(refusal({ KEEP_ALIVE_TIMEOUT_MS: '99', MAX_PAGE_BYTES: '1' }).message).toBe(
      'MAX_PAGE_BYTES must not be less than 65536',
    );
    expect(
      refusal({ SCRIBE_FAILPOINT: 'Bad', ALLOW_ANONYMOUS: 'yes', PORT: '65536' }).message,
    ).toBe('PORT must not be greater than 65535');
    expect(refusal({ KEEP_ALIVE_TIMEOUT_MS: '99', SUBSCRIPTION_IDLE_MS: '1' }).message).toBe(
      'SUBSCRIPTION_IDLE_MS must not be less than 100',
    );
    expect(refusal({ LOG_LEVEL: 'info', SUBSCRIPTION_IDLE_MS: '1' }).message).toBe(
      'SUBSCRIPTION_IDLE_MS must not be less than 100',
    );
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

    it.each(['text', 'json'])('accepts LOG_FORMAT=%s', (format) => {
      expect(validateEnvironment({ LOG_FORMAT: format }).LOG_FORMAT).toBe(format);
    });

    it.each(['JSON', 'pretty', 'logfmt'])('refuses LOG_FORMAT=%s', (format) => {
      expect(refusal({ LOG_FORMAT: format }).message).toBe(
        'LOG_FORMAT must be one of the following values: text, json',
      );
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
});
