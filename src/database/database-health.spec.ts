import { Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { deferred } from '../common/testing/deferred.js';
import { type Unavailable, type Written } from '../message/outcomes.js';
import { DatabaseHealth } from './database-health.js';
import { DatabaseHeartbeat } from './database-heartbeat.js';

/** A driver error with a code, as describeError prints it. */
function driverError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Asks `sut` to admit a write that runs until released: which of the write and the skip ran
 * (at once, as admit decides), and the release, which waits for the admission to end.
 */
function admitHeld(sut: DatabaseHealth): { ran: string; release: () => Promise<void> } {
  const gate = deferred();
  const ran: string[] = [];
  const done = sut.admit(
    async () => {
      ran.push('write');
      await gate.promise;
    },
    async () => {
      ran.push('skip');
    },
  );
  return {
    ran: ran.join(),
    release: async () => {
      gate.resolve();
      await done;
    },
  };
}

/** What admit() does with a write now: 'write' or 'skip' (the write, if any, ends at once). */
async function admission(sut: DatabaseHealth): Promise<string> {
  const held = admitHeld(sut);
  await held.release();
  return held.ran;
}

/** Whether the probe lease is free now: tryProbe runs its probe (and hands the lease back). */
async function leaseFree(sut: DatabaseHealth): Promise<boolean> {
  return sut.tryProbe(
    async () => true,
    async () => false,
  );
}

describe(DatabaseHealth.name, () => {
  let now: number;
  let logger: CapturingLogger;
  let ready: boolean;

  /** Level and message of each line logged, in order. */
  const logged = () => logger.lines.map(({ level, message }) => ({ level, message }));

  const health = (backgroundRetry: boolean, heartbeat?: DatabaseHeartbeat) =>
    new DatabaseHealth(
      {
        get isReady() {
          return ready;
        },
      },
      backgroundRetry,
      () => now,
      logger,
      heartbeat,
    );

  beforeEach(() => {
    ready = true;
    now = 1_000_000;
    logger = new CapturingLogger();
  });

  it("logs through Nest's Logger, under its own name, unless given a logger", () => {
    Logger.overrideLogger(logger);
    const sut = new DatabaseHealth({ isReady: true }, false);

    sut.failed('s1', new Error('down'), 1);

    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: 'Database write for session s1 failed (1 consecutive failure(s), 1 pending): down',
        params: ['DatabaseHealth'],
      },
    ]);
    expect(sut.status().lastErrorAt).toBeGreaterThan(1_000_000);
  });

  describe('a full disk under SQLite', () => {
    it('is told apart from other failures of writes and probes, and forgotten once a write commits', () => {
      const sut = health(true);

      const full = 'SQLITE_FULL: database or disk is full';

      sut.failed('s1', driverError('database is locked', 'SQLITE_BUSY'), 1);
      expect(sut.status().diskFull).toBeNull();
      sut.failed('s1', driverError('database or disk is full', 'SQLITE_FULL'), 1);
      expect(sut.status().diskFull).toBe(full);
      sut.failed('s1', undefined, 1);
      expect(sut.status().diskFull).toBe(full);
      sut.probeFailed(driverError('connection refused', 'ECONNREFUSED'), '');
      expect(sut.status().diskFull).toBeNull();
      sut.probeFailed(driverError('database or disk is full', 'SQLITE_FULL'), '');
      expect(sut.status().diskFull).toBe(full);

      sut.succeeded();

      expect(sut.status()).toMatchObject({ writable: true, diskFull: null });
    });
  });

  describe('diskFull', () => {
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

    it('is null while the database takes writes, or fails for another reason', () => {
      const sut = health(false);

      expect(sut.status().diskFull).toBeNull();
      sut.failed('s', new Error('connection refused'), 1);
      expect(sut.status().diskFull).toBeNull();
    });

    it('says why once a write failed for a full disk, until a write commits again', () => {
      const sut = health(false);

      sut.failed('s', full, 1);
      expect(sut.status().diskFull).toBe('SQLITE_FULL: database or disk is full');

      sut.succeeded('s');
      expect(sut.status().diskFull).toBeNull();
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
    it('admits every write, none holding the probe lease, and reports the database up with no error', async () => {
      const sut = health(false);

      const writes = [admitHeld(sut), admitHeld(sut)];

      expect(writes.map(({ ran }) => ran)).toEqual(['write', 'write']);
      expect(await leaseFree(sut)).toBe(true);
      await Promise.all(writes.map(({ release }) => release()));
      expect(sut.isFailing).toBe(false);
      expect(sut.status()).toEqual({
        up: true,
        writable: true,
        lastError: null,
        lastErrorAt: null,
        diskFull: null,
        consecutiveFailures: new Map(),
      });
    });

    it('says the database is not up until it is connected and migrated', () => {
      const sut = health(false);
      ready = false;

      expect(sut.status()).toMatchObject({ up: false, writable: true });
      ready = true;
      expect(sut.status().up).toBe(true);
    });

    it('says a success ends no outage', () => {
      expect(health(false).succeeded('s1')).toBe(false);
    });
  });

  describe('admission while failing', () => {
    it('without the background retry lets one write at a time probe, the others skip', async () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);

      const first = admitHeld(sut);
      expect(first.ran).toBe('write');
      expect(await admission(sut)).toBe('skip');

      await first.release();
      expect(await admission(sut)).toBe('write');
    });

    it('keeps the probe lease taken when a skipped write ends', async () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);
      const probe = admitHeld(sut);

      expect(await admission(sut)).toBe('skip');

      expect(probe.ran).toBe('write');
      expect(await leaseFree(sut)).toBe(false);
      expect(await admission(sut)).toBe('skip');
      await probe.release();
    });

    it('hands the lease back when the probing write fails', async () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);

      await expect(
        sut.admit(
          () => Promise.reject(new Error('boom')),
          async () => undefined,
        ),
      ).rejects.toThrow('boom');

      expect(await leaseFree(sut)).toBe(true);
    });

    it('with the background retry journals every write at once: only the retry probes', async () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect([await admission(sut), await admission(sut)]).toEqual(['skip', 'skip']);
      expect(await leaseFree(sut)).toBe(true);
    });

    it('admits writes again once a write succeeded', async () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect(sut.succeeded('s2')).toBe(true);
      expect(sut.isFailing).toBe(false);
      expect(await admission(sut)).toBe('write');
      expect(sut.succeeded('s2')).toBe(false);
    });

    it('answers with what the write or the skip came to', async () => {
      const sut = health(true);

      expect(
        await sut.admit(
          async () => 'written',
          async () => 'skipped',
        ),
      ).toBe('written');
      sut.failed('s1', new Error('down'), 1);
      expect(
        await sut.admit(
          async () => 'written',
          async () => 'skipped',
        ),
      ).toBe('skipped');
    });
  });

  describe('the probe lease', () => {
    it('is granted to one caller at a time, until its probe has come back', async () => {
      const sut = health(true);
      const gate = deferred();
      const ran: string[] = [];

      const first = sut.tryProbe(
        async () => {
          ran.push('first');
          await gate.promise;
          return 'first probed';
        },
        async () => 'first busy',
      );
      const second = await sut.tryProbe(
        async () => 'second probed',
        async () => 'second busy',
      );

      expect(second).toBe('second busy');
      gate.resolve();
      expect(await first).toBe('first probed');
      expect(ran).toEqual(['first']);
      expect(await leaseFree(sut)).toBe(true);
    });

    it('is handed back when the probe fails', async () => {
      const sut = health(true);

      await expect(
        sut.tryProbe(
          () => Promise.reject(new Error('boom')),
          async () => undefined,
        ),
      ).rejects.toThrow('boom');

      expect(await leaseFree(sut)).toBe(true);
    });

    it('is refused while a write probes, and a write cannot probe while it is held', async () => {
      const sut = health(false);
      sut.failed('s1', new Error('down'), 1);

      const probe = admitHeld(sut);
      expect(await leaseFree(sut)).toBe(false);
      await probe.release();

      const gate = deferred();
      const held = sut.tryProbe(
        () => gate.promise,
        async () => undefined,
      );
      expect(await admission(sut)).toBe('skip');
      gate.resolve();
      await held;
    });

    it('ends an outage when it succeeds, keeping the failure counts of sessions', () => {
      const sut = health(true);
      sut.failed('s1', new Error('down'), 1);

      expect(sut.succeeded()).toBe(true);

      expect(sut.status().writable).toBe(true);
      expect(sut.status().consecutiveFailures).toEqual(new Map([['s1', 1]]));
    });
  });

  describe('failed writes', () => {
    it('turns failing, and remembers the described error with the time it happened', () => {
      const sut = health(false);

      sut.failed('s1', driverError('database is locked', 'SQLITE_BUSY'), 4);

      expect(sut.isFailing).toBe(true);
      expect(sut.status()).toEqual({
        up: false,
        writable: false,
        lastError: 'SQLITE_BUSY: database is locked',
        lastErrorAt: 1_000_000,
        diskFull: null,
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
      expect(sut.status().lastErrorAt).toBe(1_000_000);
      expect(sut.status().lastError).toBe('connection refused');
    });

    it('says "unknown error" when a write was not tried and no error was ever seen', () => {
      const sut = health(true);

      sut.failed('s1', undefined, 0);

      expect(logger.messages('warn')).toEqual([
        'Database write for session s1 not tried, the database is failing (1 consecutive failure(s), 0 pending): unknown error',
      ]);
      expect(sut.isFailing).toBe(true);
      expect(sut.status().lastError).toBeNull();
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
        writable: false,
        lastError: 'ETIMEDOUT: timeout',
        lastErrorAt: 1_001_000,
      });
      expect(logged()).toHaveLength(1);
    });

    it('turn a healthy database failing', async () => {
      const sut = health(false);

      sut.probeFailed(new Error('down'), '');

      const probe = admitHeld(sut);
      expect(probe.ran).toBe('write');
      expect(await leaseFree(sut)).toBe(false);
      await probe.release();
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

    it('is not reset by asking to write, or by a probe that has not come back', async () => {
      const sut = health(false);
      now += 20_000;
      await admission(sut);
      await leaseFree(sut);
      expect(sut.quietForMs()).toBe(20_000);
    });
  });

  describe('check (/health)', () => {
    /** A heartbeat that answers `answer` (a Written, or an Unavailable), counting the calls. */
    class Beats extends DatabaseHeartbeat {
      calls = 0;
      constructor(private readonly answer: Written | Unavailable) {
        super();
      }
      heartbeat(): Promise<Written | Unavailable> {
        this.calls += 1;
        return Promise.resolve(this.answer);
      }
    }
    const committed = () =>
      new Beats({ kind: 'written', inserted: [], skipped: [], refused: [], revision: null });

    it('resolves once its heartbeat commits', async () => {
      const beats = committed();
      const sut = health(false, beats);
      await expect(sut.check()).resolves.toBeUndefined();
      expect(beats.calls).toBe(1);
    });

    it("rejects with the heartbeat's error when the database is unavailable, and notes nothing", async () => {
      const refused = new Error('connection refused');
      const sut = health(false, new Beats({ kind: 'unavailable', error: refused }));
      const before = sut.status();

      await expect(sut.check()).rejects.toBe(refused);

      expect(sut.status()).toEqual(before);
      expect(logger.lines).toEqual([]);
    });

    it('asks no heartbeat while the disk is known to be full, and says so', async () => {
      const beats = committed();
      const sut = health(false, beats);
      sut.failed('s1', driverError('SQLITE_FULL: database or disk is full', 'SQLITE_FULL'), 1);

      await expect(sut.check()).rejects.toThrow(
        "the database's disk is full: SQLITE_FULL: database or disk is full",
      );
      expect(beats.calls).toBe(0);
    });

    it('rejects when built without a heartbeat', async () => {
      await expect(health(false).check()).rejects.toThrow('DatabaseHealth was given no heartbeat');
    });

    it('neither waits for nor takes the probe lease', async () => {
      const sut = health(false, committed());
      let checked: Promise<void> | undefined;
      const lease = sut.tryProbe(
        async () => {
          checked = sut.check();
          await checked;
          return 'probe';
        },
        async () => 'busy',
      );
      expect(await lease).toBe('probe');
      await expect(checked).resolves.toBeUndefined();
      expect(await leaseFree(sut)).toBe(true);
    });
  });
});
