import { jest } from '@jest/globals';
import { type DataSource } from 'typeorm';
import { type DatabaseReadiness } from './database-readiness.js';
import { BACKFILL_RETRY_MS, SearchBackfill } from './search-backfill.js';

function setUp(ready: Promise<void> = Promise.resolve()) {
  const logger = { log: jest.fn(), warn: jest.fn() };
  const backfill = new SearchBackfill(
    {} as DataSource,
    { ready } as unknown as DatabaseReadiness,
    logger,
  );
  const batch = jest.spyOn(backfill, 'batch');
  return { backfill, batch, logger };
}

describe('SearchBackfill', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs batches until none is left, once the database is ready, and says so', async () => {
    let open!: () => void;
    const { backfill, batch, logger } = setUp(new Promise<void>((done) => (open = done)));
    batch.mockResolvedValueOnce(true).mockResolvedValueOnce(true).mockResolvedValueOnce(false);
    const run = backfill.run();
    await Promise.resolve();
    expect(batch).not.toHaveBeenCalled();
    open();
    await run;
    expect(batch).toHaveBeenCalledTimes(3);
    expect(logger.log.mock.calls).toEqual([
      ['Search backfill: indexing the messages stored before search existed'],
      ['Search backfill: done (2 batch(es) of up to 500)'],
    ]);
  });

  it('says nothing when nothing was left', async () => {
    const { backfill, batch, logger } = setUp();
    batch.mockResolvedValue(false);
    await backfill.run();
    expect(batch).toHaveBeenCalledTimes(1);
    expect(logger.log).not.toHaveBeenCalled();
  });

  it('tries a failed batch again later, warning once, and says when it answers again', async () => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick', 'setImmediate'] });
    const { backfill, batch, logger } = setUp();
    batch
      .mockRejectedValueOnce(new Error('SQLITE_BUSY: database is locked'))
      .mockRejectedValueOnce(new Error('SQLITE_BUSY: database is locked'))
      .mockResolvedValueOnce(false);
    const run = backfill.run();
    for (let tries = 1; tries <= 2; tries++) {
      await jest.advanceTimersByTimeAsync(BACKFILL_RETRY_MS - 1);
      expect(batch).toHaveBeenCalledTimes(tries);
      await jest.advanceTimersByTimeAsync(1);
    }
    await run;
    expect(batch).toHaveBeenCalledTimes(3);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(
      `Search backfill: a batch failed (SQLITE_BUSY: database is locked); trying again in ${BACKFILL_RETRY_MS} ms`,
    );
    expect(logger.log).toHaveBeenCalledWith('Search backfill: the database answers again');
  });

  it('stops at shutdown, while waiting to try again or for the database', async () => {
    const waiting = setUp();
    waiting.batch.mockRejectedValue(new Error('down'));
    waiting.backfill.onApplicationBootstrap();
    await new Promise((done) => setImmediate(done));
    await waiting.backfill.onApplicationShutdown();
    expect(waiting.batch).toHaveBeenCalledTimes(1);

    const never = setUp(new Promise<void>(() => undefined));
    never.backfill.onApplicationBootstrap();
    await never.backfill.onApplicationShutdown();
    expect(never.batch).not.toHaveBeenCalled();
  });
});
