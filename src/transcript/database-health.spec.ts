import { Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { DatabaseHealth } from './database-health.js';

/** A driver error with a code, as describeError prints it. */
function driverError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe(DatabaseHealth.name, () => {
  let now: number;
  let logger: CapturingLogger;

  /** Level and message of each line logged, in order. */
  const logged = () => logger.lines.map(({ level, message }) => ({ level, message }));

  const health = (backgroundRetry: boolean) =>
    new DatabaseHealth(backgroundRetry, () => now, logger);

  beforeEach(() => {
    now = 1_000_000;
    logger = new CapturingLogger();
  });

  it("logs through Nest's Logger, under its own name, unless given a logger", () => {
    Logger.overrideLogger(logger);
    const sut = new DatabaseHealth(false);

    sut.failed('s1', new Error('down'), 1);

    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: 'Database write for session s1 failed (1 consecutive failure(s), 1 pending): down',
        params: ['DatabaseHealth'],
      },
    ]);
    expect(sut.status().lastDatabaseErrorAt).toBeGreaterThan(1_000_000);
  });

  describe('a full disk under SQLite', () => {
    it('is told apart from other failures of writes and probes, and forgotten once a write commits', () => {
      const sut = health(true);

      sut.failed('s1', driverError('database is locked', 'SQLITE_BUSY'), 1);
      expect(sut.databaseDiskFull).toBe(false);
      sut.failed('s1', driverError('database or disk is full', 'SQLITE_FULL'), 1);
      expect(sut.databaseDiskFull).toBe(true);
      sut.failed('s1', undefined, 1);
      expect(sut.databaseDiskFull).toBe(true);
      sut.probeFailed(driverError('connection refused', 'ECONNREFUSED'), '');
      expect(sut.databaseDiskFull).toBe(false);
      sut.probeFailed(driverError('database or disk is full', 'SQLITE_FULL'), '');
      expect(sut.databaseDiskFull).toBe(true);

      sut.succeeded();

      expect(sut.databaseDiskFull).toBe(false);
    });
  });

  describe('recoveries', () => {
    it('are worth a log line once a minute at most: a database that flaps ends outages quietly', () => {
      const sut = health(true);
      const outageThenSuccess = () => {
        sut.failed('s1', new Error('down'), 1);
        return sut.succeeded();
      };

      expect(outageThenSuccess()).toBe(true);
      now += 59_999;
      expect(outageThenSuccess()).toBe(false);
      expect(sut.isFailing).toBe(false);
      now += 1;
      expect(outageThenSuccess()).toBe(true);
    });
  });

  describe('while healthy', () => {
    it('admits every write, and reports the database writable with no error', () => {
      const sut = health(false);

      expect([sut.admit(), sut.admit()]).toEqual(['write', 'write']);
      expect(sut.isFailing).toBe(false);
      expect(sut.status()).toEqual({
        databaseWritable: true,
        lastDatabaseError: null,
        lastDatabaseErrorAt: null,
        consecutiveFailures: new Map(),
      });
    });

    it('says a success ends no outage', () => {
      expect(health(false).succeeded('s1')).toBe(false);
    });
  });

  describe('admission while failing', () => {
    it('without the background retry lets one write at a time probe, the others skip', () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);

      const first = sut.admit();
      expect(first).toBe('probe');
      expect(sut.admit()).toBe('skip');

      sut.settle(first);
      expect(sut.admit()).toBe('probe');
    });

    it('keeps the probe taken when a write or skip admission is settled', () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);
      const probe = sut.admit();

      sut.settle('skip');
      sut.settle('write');

      expect(probe).toBe('probe');
      expect(sut.admit()).toBe('skip');
    });

    it('with the background retry journals every write at once: only the retry probes', () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect([sut.admit(), sut.admit()]).toEqual(['skip', 'skip']);
      expect(sut.startProbe()).toBe(true);
    });

    it('admits writes again once a write succeeded', () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect(sut.succeeded('s2')).toBe(true);
      expect(sut.isFailing).toBe(false);
      expect(sut.admit()).toBe('write');
      expect(sut.succeeded('s2')).toBe(false);
    });
  });

  describe('the background probe', () => {
    it('is granted to one caller at a time, until it is finished', () => {
      const sut = health(true);

      expect(sut.startProbe()).toBe(true);
      expect(sut.startProbe()).toBe(false);
      sut.finishProbe();
      expect(sut.startProbe()).toBe(true);
    });

    it('is refused while a write probes, and a write cannot probe while it runs', () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);

      const probe = sut.admit();
      expect(sut.startProbe()).toBe(false);
      sut.settle(probe);
      expect(sut.startProbe()).toBe(true);
      expect(sut.admit()).toBe('skip');
    });

    it('ends an outage when it succeeds, keeping the failure counts of sessions', () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect(sut.succeeded()).toBe(true);

      expect(sut.status().databaseWritable).toBe(true);
      expect(sut.status().consecutiveFailures).toEqual(new Map([['s1', 1]]));
    });
  });

  describe('failed writes', () => {
    it('turns failing, and remembers the described error with the time it happened', () => {
      const sut = health(false);

      sut.failed('s1', driverError('database is locked', 'SQLITE_BUSY'), 4);

      expect(sut.isFailing).toBe(true);
      expect(sut.status()).toEqual({
        databaseWritable: false,
        lastDatabaseError: 'SQLITE_BUSY: database is locked',
        lastDatabaseErrorAt: 1_000_000,
        consecutiveFailures: new Map([['s1', 1]]),
      });
    });

    it('logs WARN for the first two consecutive failures of a session, ERROR from the third', () => {
      const sut = health(false);

      for (let failure = 1; failure <= 4; failure++) {
        sut.failed('s1', new Error(`down ${failure}`), failure);
      }

      expect(logged()).toEqual([
        {
          level: 'warn',
          message:
            'Database write for session s1 failed (1 consecutive failure(s), 1 pending): down 1',
        },
        {
          level: 'warn',
          message:
            'Database write for session s1 failed (2 consecutive failure(s), 2 pending): down 2',
        },
        {
          level: 'error',
          message:
            'Database write for session s1 failed (3 consecutive failure(s), 3 pending): down 3',
        },
      ]);
    });

    it("after the third, logs a session's failures only at the 10th, 100th and 1000th", () => {
      const sut = health(false);

      for (let failure = 1; failure <= 1001; failure++) sut.failed('s1', new Error('down'), 1);

      expect(
        logged().map(({ message }) => /\((\d+) consecutive/.exec(String(message))?.[1]),
      ).toEqual(['1', '2', '3', '10', '100', '1000']);
      expect(
        logged()
          .slice(3)
          .every(({ level }) => level === 'error'),
      ).toBe(true);
      expect(sut.status().consecutiveFailures.get('s1')).toBe(1001);
    });

    it('counts each session on its own', () => {
      const sut = health(false);

      sut.failed('s1', new Error('down'), 1);
      sut.failed('s1', new Error('down'), 2);
      sut.failed('s2', new Error('down'), 1);

      expect(sut.status().consecutiveFailures).toEqual(
        new Map([
          ['s1', 2],
          ['s2', 1],
        ]),
      );
      expect(logger.messages('error')).toEqual([]);
    });

    it('says when a write was not tried, with the last error seen, and keeps its time', () => {
      const sut = health(true);
      sut.failed('s1', new Error('connection refused'), 1);
      now += 5_000;

      sut.failed('s2', undefined, 7);

      expect(logger.messages('warn')[1]).toBe(
        'Database write for session s2 not tried, the database is failing (1 consecutive failure(s), 7 pending): connection refused',
      );
      expect(sut.status().lastDatabaseErrorAt).toBe(1_000_000);
      expect(sut.status().lastDatabaseError).toBe('connection refused');
    });

    it('says "unknown error" when a write was not tried and no error was ever seen', () => {
      const sut = health(true);

      sut.failed('s1', undefined, 0);

      expect(logger.messages('warn')).toEqual([
        'Database write for session s1 not tried, the database is failing (1 consecutive failure(s), 0 pending): unknown error',
      ]);
      expect(sut.isFailing).toBe(true);
      expect(sut.status().lastDatabaseError).toBeNull();
    });

    it('starts a session over at one once a write of it succeeded', () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);
      sut.failed('s1', new Error('down'), 1);
      sut.failed('s2', new Error('down'), 1);

      sut.succeeded('s1');
      sut.failed('s1', new Error('down again'), 1);

      expect(sut.status().consecutiveFailures).toEqual(
        new Map([
          ['s2', 1],
          ['s1', 1],
        ]),
      );
      expect(logged().at(-1)?.level).toBe('warn');
    });

    it('forgets a session whose backlog is gone', () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);
      sut.failed('s2', new Error('down'), 1);

      sut.forget('s1');

      expect(sut.status().consecutiveFailures).toEqual(new Map([['s2', 1]]));
      expect(sut.isFailing).toBe(true);
    });
  });

  describe('failed background probes', () => {
    it('report the outage at ERROR at once, then at most once a minute', () => {
      const sut = health(true);
      sut.failed('s1', new Error('down 0'), 1);
      logger.lines.length = 0;

      sut.probeFailed(new Error('down 1'), '3 pending');
      now += 59_999;
      sut.probeFailed(new Error('down 2'), '4 pending');
      now += 1;
      sut.probeFailed(new Error('down 3'), '5 pending');
      now += 30_000;
      sut.probeFailed(new Error('down 4'), '6 pending');

      expect(logged()).toEqual([
        { level: 'error', message: 'Database still not writable (down 1); 3 pending' },
        { level: 'error', message: 'Database still not writable (down 3); 5 pending' },
      ]);
    });

    it('keep the newest error and its time even when they are not reported', () => {
      const sut = health(true);

      sut.probeFailed(new Error('down 1'), '');
      now += 1_000;
      sut.probeFailed(driverError('timeout', 'ETIMEDOUT'), '');

      expect(sut.isFailing).toBe(true);
      expect(sut.status()).toMatchObject({
        databaseWritable: false,
        lastDatabaseError: 'ETIMEDOUT: timeout',
        lastDatabaseErrorAt: 1_001_000,
      });
      expect(logged()).toHaveLength(1);
    });

    it('turn a healthy database failing', () => {
      const sut = health(false);

      sut.probeFailed(new Error('down'), '');

      expect(sut.admit()).toBe('probe');
    });

    it('of a database believed healthy (an idle probe) say "not writable", not "still"', () => {
      const sut = health(true);

      sut.probeFailed(new Error('down'), '0 pending');

      expect(logged()).toEqual([
        { level: 'error', message: 'Database not writable (down); 0 pending' },
      ]);
    });
  });

  describe('quiet time', () => {
    it('counts from the start while nothing has written', () => {
      const sut = health(true);
      expect(sut.quietForMs()).toBe(0);
      now += 12_345;
      expect(sut.quietForMs()).toBe(12_345);
    });

    it.each([
      ['a committed write', (sut: DatabaseHealth) => sut.succeeded('s1')],
      ['a committed probe', (sut: DatabaseHealth) => sut.succeeded()],
      ['a failed write', (sut: DatabaseHealth) => sut.failed('s1', new Error('down'), 1)],
      ['a write not tried', (sut: DatabaseHealth) => sut.failed('s1', undefined, 1)],
      ['a failed probe', (sut: DatabaseHealth) => sut.probeFailed(new Error('down'), '')],
    ])('starts again at %s', (_what, answer) => {
      const sut = health(true);
      now += 20_000;
      answer(sut);
      expect(sut.quietForMs()).toBe(0);
      now += 7;
      expect(sut.quietForMs()).toBe(7);
    });

    it('is not reset by asking to write, or by a probe that has not come back', () => {
      const sut = health(false);
      now += 20_000;
      sut.settle(sut.admit());
      sut.startProbe();
      sut.finishProbe();
      expect(sut.quietForMs()).toBe(20_000);
    });
  });
});
