import { jest } from '@jest/globals';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { classifyDatabaseError } from './database-errors.js';
import { DatabaseNotReadyError } from './database-readiness.js';
import { DatabaseStartup, type StartableDataSource } from './database-startup.js';
import { SchemaNewerError } from './schema-newer.error.js';

/** A DataSource whose initialize() fails with each of `failures` in turn, then succeeds. */
class FakeDataSource implements StartableDataSource {
  isInitialized = false;
  initializeCalls = 0;
  disconnects = 0;
  /** Set true to fail as initialize() does when the migrations fail (it closed itself). */
  initializedWhenFailing = false;
  readonly driver = {
    disconnect: async () => {
      this.disconnects += 1;
      if (this.disconnects === 1) throw new Error('nothing to close');
    },
  };

  constructor(private readonly failures: Error[]) {}

  destroyed = 0;

  async destroy(): Promise<void> {
    this.destroyed += 1;
    this.isInitialized = false;
  }

  async initialize(): Promise<void> {
    this.initializeCalls += 1;
    const failure = this.failures.shift();
    if (failure) {
      this.isInitialized = this.initializedWhenFailing;
      throw failure;
    }
    this.isInitialized = true;
  }
}

const refused = () => Object.assign(new Error('connect refused'), { code: 'ECONNREFUSED' });
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(DatabaseStartup.name, () => {
  let logger: CapturingLogger;
  let now: number;
  const logged = () => logger.lines.map(({ level, message }) => ({ level, message }));

  beforeEach(() => {
    logger = new CapturingLogger();
    now = 50_000;
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
  });

  afterEach(() => jest.useRealTimers());

  const startup = (source: FakeDataSource, intervalMs = 200) =>
    new DatabaseStartup(source, intervalMs, logger, () => now);

  it('is ready after the first attempt when the database answers, with one line', async () => {
    const source = new FakeDataSource([]);
    const sut = startup(source);
    expect(sut.isReady).toBe(false);

    await sut.onModuleInit();

    expect(sut.isReady).toBe(true);
    expect(source.destroyed).toBe(0);
    expect(() => sut.assertReady()).not.toThrow();
    await expect(sut.ready).resolves.toBeUndefined();
    expect(sut.attemptCount).toBe(1);
    expect(logged()).toEqual([{ level: 'log', message: 'Database connected and migrated' }]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('returns from the first failed attempt and retries every interval, logging only the start and the end', async () => {
    const source = new FakeDataSource([refused(), refused(), refused()]);
    const sut = startup(source);
    let ready = false;
    void sut.ready.then(() => (ready = true));

    await sut.onModuleInit();

    expect(sut.isReady).toBe(false);
    expect(source.initializeCalls).toBe(1);
    expect(logged()).toEqual([
      {
        level: 'warn',
        message:
          'Database not connected and migrated at start (ECONNREFUSED: connect refused); appends are journaled, reads answer DATABASE_UNAVAILABLE, and the start is retried every 200 ms',
      },
    ]);
    await jest.advanceTimersByTimeAsync(199);
    expect(source.initializeCalls).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(source.initializeCalls).toBe(2);
    now += 400;
    await jest.advanceTimersByTimeAsync(200);
    expect(source.initializeCalls).toBe(3);
    expect(ready).toBe(false);
    now += 1000;
    await jest.advanceTimersByTimeAsync(200);
    await settle();

    expect(source.initializeCalls).toBe(4);
    expect(sut.isReady).toBe(true);
    expect(ready).toBe(true);
    expect(sut.attemptCount).toBe(4);
    expect(logged().slice(1)).toEqual([
      { level: 'debug', message: 'Database start attempt 2 failed: ECONNREFUSED: connect refused' },
      { level: 'debug', message: 'Database start attempt 3 failed: ECONNREFUSED: connect refused' },
      {
        level: 'log',
        message:
          'Database connected and migrated after 4 attempt(s) in 1.4 s; writing back what was journaled meanwhile',
      },
    ]);
    await jest.advanceTimersByTimeAsync(1000);
    expect(source.initializeCalls).toBe(4);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('closes what a failed connection half opened, not what initialize() closed itself', async () => {
    const halfOpen = new FakeDataSource([refused(), refused()]);
    const sut = startup(halfOpen);
    await sut.onModuleInit();
    await jest.advanceTimersByTimeAsync(200);
    expect(halfOpen.disconnects).toBe(2);
    sut.onApplicationShutdown();

    const migrationFailed = new FakeDataSource([new Error('migration failed')]);
    migrationFailed.initializedWhenFailing = true;
    await startup(migrationFailed).onModuleInit();
    expect(migrationFailed.disconnects).toBe(0);
  });

  it('refuses the start when the schema is newer than the code, without retrying', async () => {
    const source = new FakeDataSource([new SchemaNewerError(['Future1999999999999'])]);
    const sut = startup(source);

    await expect(sut.onModuleInit()).rejects.toThrow(
      'The database schema is newer than this Scribe: it records migration(s) Future1999999999999 that this version does not know',
    );

    // The line is main.ts's (or the host's), from the error: none here.
    expect(logged()).toEqual([]);
    expect(jest.getTimerCount()).toBe(0);
    expect(sut.isReady).toBe(false);
  });

  it('stops with one error line when a background attempt finds a newer schema', async () => {
    const source = new FakeDataSource([refused(), new SchemaNewerError(['Future1999999999999'])]);
    const sut = startup(source);
    await sut.onModuleInit();

    await jest.advanceTimersByTimeAsync(200);
    await jest.advanceTimersByTimeAsync(1000);

    expect(source.initializeCalls).toBe(2);
    expect(logger.messages('error')).toEqual([
      expect.stringMatching(/^The database schema is newer than this Scribe: .*; not retried$/),
    ]);
    expect(sut.isReady).toBe(false);
    expect(() => sut.assertReady()).toThrow(DatabaseNotReadyError);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('refuses with DATABASE_UNAVAILABLE, an outage to the write path, until ready', async () => {
    const sut = startup(new FakeDataSource([refused()]));
    await sut.onModuleInit();

    let thrown: unknown;
    try {
      sut.assertReady();
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(DatabaseNotReadyError);
    const error = thrown as DatabaseNotReadyError;
    expect(error.code).toBe(ScribeErrorCode.DatabaseUnavailable);
    expect(error.reason).toBe('ECONNREFUSED: connect refused');
    // The client is not told the host or the driver's words.
    expect(error.message).not.toContain('ECONNREFUSED');
    expect(error.message).toContain('not connected and migrated yet');
    expect(classifyDatabaseError(error).kind).toBe('unavailable');
    sut.onApplicationShutdown();
  });

  it('names no reason before its first attempt', () => {
    const sut = startup(new FakeDataSource([]));
    expect(() => sut.assertReady()).toThrow(DatabaseNotReadyError);
    try {
      sut.assertReady();
    } catch (error) {
      expect((error as DatabaseNotReadyError).reason).toBeNull();
    }
  });

  it('retries every second when the background retry is off (DB_RETRY_INTERVAL_MS=0)', async () => {
    const source = new FakeDataSource([refused()]);
    const sut = startup(source, 0);
    await sut.onModuleInit();
    expect(logged()[0].message).toContain('the start is retried every 1000 ms');

    await jest.advanceTimersByTimeAsync(999);
    expect(source.initializeCalls).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(source.initializeCalls).toBe(2);
    expect(sut.isReady).toBe(true);
  });

  it('stops retrying at shutdown, and is never ready then', async () => {
    const source = new FakeDataSource([refused()]);
    const sut = startup(source);
    await sut.onModuleInit();

    sut.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(1000);

    expect(source.initializeCalls).toBe(1);
    expect(sut.isReady).toBe(false);
  });

  it('closes a connection that came up only after shutdown began, and is not ready', async () => {
    let finish: () => void = () => undefined;
    const source = new FakeDataSource([]);
    source.initialize = () =>
      new Promise<void>((resolve) => {
        finish = () => {
          source.isInitialized = true;
          resolve();
        };
      });
    const sut = startup(source);
    const first = sut.onModuleInit();

    sut.onApplicationShutdown();
    finish();
    await first;

    expect(source.destroyed).toBe(1);
    expect(sut.isReady).toBe(false);
    expect(logged()).toEqual([]);
  });

  it("logs through Nest's Logger, under its own name, unless given a logger", async () => {
    Logger.overrideLogger(logger);
    const sut = new DatabaseStartup(new FakeDataSource([]), 200);
    await sut.onModuleInit();
    Logger.overrideLogger(new ConsoleLogger());
    expect(logger.lines).toEqual([
      { level: 'log', message: 'Database connected and migrated', params: ['DatabaseStartup'] },
    ]);
  });
});
