import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { EVENT_LISTENER_METADATA, EventEmitter2 } from '@nestjs/event-emitter';
import { type Counter } from 'prom-client';
import { Failpoints } from '../common/failpoints.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { SPOOL_RETRY_REQUESTED_EVENT } from '../message/message-events.js';
import { type MessageRecord } from '../message/message-record.js';
import { type Progress } from '../message/outcomes.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type CoalescingWriter } from './coalescing-writer.js';
import { DatabaseHealth } from '../database/database-health.js';
import { HeldMoves } from './held-moves.js';
import { JournalReplay } from './journal-replay.js';
import { WriteReports } from './write-reports.js';
import { DurableWriter } from './durable-writer.js';
import { TranscriptRecovery } from './recovery.js';
import { SessionBacklog, type Backlog } from './session-backlog.js';
import { FakeMessageStore, writerOver } from './testing/fake-message-store.js';
import { storedElsewhereOver } from './testing/fake-session-queries.js';
import { FakeSpool } from './testing/fake-spool.js';

const SPOOL_DIR = '/fake/pending_messages';
const RETRY_MS = 1_000;
const IDLE_PROBE_MS = 10_000;

function records(sessionId: string, ...contents: string[]): MessageRecord[] {
  return contents.map((content) => acceptedRecord(sessionId, content));
}

async function total(counter: Counter): Promise<number> {
  return (await counter.get()).values.reduce((sum, value) => sum + value.value, 0);
}

/**
 * Lets every promise chain under way run to its end. Deterministic here: the fakes wait on no
 * timer and no I/O, so once a macrotask comes round nothing is left to run but what a test holds.
 */
const idle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The real writer, with a gate every session's flush waits at, to count how many run at once. */
class GatedDurableWriter extends DurableWriter {
  readonly gate: Deferred = deferred();
  readonly flushed: string[] = [];
  active = 0;
  peak = 0;
  private waiters: { count: number; reached: Deferred }[] = [];

  /** Resolves once `count` flushes have begun (a barrier). */
  flushesBegun(count: number): Promise<void> {
    const reached = deferred();
    this.waiters.push({ count, reached });
    this.wake();
    return reached.promise;
  }

  override async flush(backlog: Backlog): Promise<Progress> {
    this.flushed.push(backlog.sessionId);
    this.active += 1;
    this.peak = Math.max(this.peak, this.active);
    this.wake();
    try {
      await this.gate.promise;
      return await super.flush(backlog);
    } finally {
      this.active -= 1;
    }
  }

  private wake(): void {
    const ready = this.waiters.filter((waiter) => this.flushed.length >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.reached.resolve();
  }
}

describe(TranscriptRecovery.name, () => {
  let store: FakeMessageStore;
  let writer: CoalescingWriter;
  let spool: FakeSpool;
  let logger: CapturingLogger;
  let health: DatabaseHealth;
  /** Whether the probe lease is free now: tryProbe runs its probe (and hands the lease back). */
  const leaseFree = () =>
    health.tryProbe(
      () => Promise.resolve(true),
      () => Promise.resolve(false),
    );
  let metrics: MetricsService;
  let backlog: SessionBacklog;
  let durable: GatedDurableWriter;
  let sut: TranscriptRecovery;

  function build({
    cap = 5,
    backgroundRetry = true,
    retryIntervalMs = RETRY_MS,
    idleProbeMs = IDLE_PROBE_MS,
    gated = false,
  } = {}): void {
    health = new DatabaseHealth({ isReady: true }, backgroundRetry, () => Date.now(), logger);
    const moves = new HeldMoves();
    const reports = new WriteReports(health, new EventEmitter2(), metrics);
    durable = new GatedDurableWriter(
      writer,
      spool.asService,
      spool.asIndex,
      spool.asJournal,
      health,
      reports,
      new JournalReplay(writer, spool.asJournal, moves, reports, storedElsewhereOver(store)),
      metrics,
      cap,
      new Failpoints(),
      moves,
      storedElsewhereOver(store),
    );
    if (!gated) durable.gate.resolve();
    sut = recovery(retryIntervalMs, idleProbeMs);
  }

  /** The recovery over the fakes and the health as they stand. */
  function recovery(retryIntervalMs: number, idleProbeMs: number): TranscriptRecovery {
    return new TranscriptRecovery(
      backlog,
      durable,
      writer,
      spool.asService,
      spool.asIndex,
      health,
      metrics,
      retryIntervalMs,
      idleProbeMs,
    );
  }

  beforeEach(() => {
    store = new FakeMessageStore();
    writer = writerOver(store);
    spool = new FakeSpool();
    logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    metrics = new MetricsService();
    backlog = new SessionBacklog();
    build();
  });

  afterEach(async () => {
    jest.useRealTimers();
    // Stops any timer a test started; its lines are of no interest any more.
    await sut.shutdown();
    expect(spool.misuses).toEqual([]);
  });

  /** One append per record, through the real writer, while whatever state the fakes are in. */
  async function accept(batch: MessageRecord[]): Promise<void> {
    for (const record of batch) {
      await backlog.withSession(record.sessionId, (backlog) => durable.accept(backlog, [record]));
    }
  }

  const lines = (level: string) =>
    logger.lines
      .filter((line) => line.level === level && line.params.at(-1) === 'Recovery')
      .map((line) => line.message);

  const writtenIds = () => new Set(store.writeCalls.flat());

  describe('replayAtBoot', () => {
    it('writes back what earlier runs journaled, and answers the newest acceptance time in it', async () => {
      const orphans = [...records('s1', 'a1', 'a2'), ...records('s2', 'b1')];
      spool.leaveOrphans(orphans);

      expect(await sut.replayAtBoot()).toBe(orphans[2].acceptedAt);

      expect(store.contents('s1')).toEqual(['a1', 'a2']);
      expect(store.contents('s2')).toEqual(['b1']);
      expect(spool.owedRecords()).toEqual([]);
      expect(lines('log')).toEqual(['Boot replay stored 3 journaled message(s) of 2 session(s)']);
      expect(lines('warn')).toEqual([]);
    });

    it('answers 0 and writes nothing when the journal cannot be read', async () => {
      spool.directoryUnreadable = true;

      expect(await sut.replayAtBoot()).toBe(0);

      expect(store.writeCalls).toEqual([]);
      expect(lines('log')).toEqual([]);
    });

    it('says nothing when there is nothing to replay', async () => {
      expect(await sut.replayAtBoot()).toBe(0);

      expect(spool.adoptCalls).toBe(1);
      expect(logger.lines).toEqual([]);
    });

    it('leaves in the journal what the database does not take, and says so', async () => {
      store.goDown();
      const orphans = [...records('s1', 'a1'), ...records('s2', 'b1')];
      spool.leaveOrphans(orphans);

      expect(await sut.replayAtBoot()).toBe(orphans[1].acceptedAt);

      expect(store.rows).toEqual([]);
      expect(spool.sessionsWithJournalOnly()).toEqual(['s1', 's2']);
      expect(lines('warn')).toEqual([
        `Boot replay left journaled messages of 2 session(s) in ${SPOOL_DIR}; each is written back before its next append is stored, or by the background retry`,
      ]);
      expect(lines('log')).toEqual([]);
    });

    it('writes back 16 sessions at a time', async () => {
      build({ gated: true });
      const sessions = Array.from({ length: 20 }, (_, index) => `s${index}`);
      spool.leaveOrphans(sessions.flatMap((sessionId) => records(sessionId, `${sessionId}-m`)));

      const replay = sut.replayAtBoot();
      await durable.flushesBegun(16);
      await idle();
      expect(durable.flushed).toHaveLength(16);
      durable.gate.resolve();
      await replay;

      expect(durable.peak).toBe(16);
      expect([...durable.flushed].sort()).toEqual([...sessions].sort());
      expect(store.rows).toHaveLength(20);
    });

    it('stops writing sessions back once the database fails', async () => {
      build({ backgroundRetry: false });
      store.goDown();
      const sessions = Array.from({ length: 20 }, (_, index) => `s${index}`);
      const orphans = sessions.map((sessionId) => records(sessionId, `${sessionId}-m`)[0]);
      spool.leaveOrphans(orphans);

      await sut.replayAtBoot();

      // The first 16 were under way when the first write failed; the other 4 were not tried.
      const tried = writtenIds();
      expect(orphans.slice(16).filter((record) => tried.has(record.id))).toEqual([]);
      expect(lines('warn')[0]).toContain('left journaled messages of 20 session(s)');
    });
  });

  describe('the background retry', () => {
    it('probes a failing database with a heartbeat, writes nothing while it fails, and reports the outage', async () => {
      build({ cap: 2 });
      store.goDown();
      await accept(records('s1', 'a', 'b'));
      await accept(records('s2', 'c', 'd', 'e'));
      const writes = store.writeCalls.length;

      sut.trigger();
      await idle();

      expect(store.heartbeats).toBe(1);
      expect(store.writeCalls).toHaveLength(writes);
      expect(
        logger
          .messages('error')
          .filter((line) => String(line).startsWith('Database still not writable')),
      ).toEqual([
        'Database still not writable (connection refused); 4 message(s) pending in memory, 1 session(s) with messages on disk only',
      ]);
      expect(health.isFailing).toBe(true);
      expect(spool.adoptCalls).toBe(0);
    });

    it('after a full disk takes no committed heartbeat for proof: the database stays failing while the oldest backlog does not fit', async () => {
      store.fillDisk();
      const [a] = records('s1', 'a');
      await accept([a]);
      await accept(records('s2', 'b'));
      const writes = store.writeCalls.length;

      sut.trigger();
      await idle();

      expect(store.heartbeats).toBe(1);
      // One write-back tried, of the oldest backlog, and nothing more.
      expect(store.writeCalls.slice(writes)).toEqual([[a.id]]);
      expect(health.isFailing).toBe(true);
      expect(health.status().diskFull).toBe('SQLITE_FULL: database or disk is full');
      expect(lines('log')).toEqual([]);
      expect(store.rows).toEqual([]);
    });

    it('after a full disk counts the database writable once the write-back stores the oldest backlog, then writes back the rest', async () => {
      store.fillDisk();
      await accept(records('s1', 'a'));
      await accept(records('s2', 'b'));
      store.heal();

      sut.trigger();
      await idle();

      expect(health.isFailing).toBe(false);
      expect(store.contents()).toEqual(['a', 'b']);
      expect(backlog.total).toBe(0);
    });

    it('after a full disk with nothing to write back, takes a committed heartbeat for proof', async () => {
      health.probeFailed(store.fillDisk(), 'nothing pending');
      store.heal();

      sut.trigger();
      await idle();

      expect(health.isFailing).toBe(false);
      expect(store.writeCalls).toEqual([]);
    });

    it('probes outside any session lock: appends go on while the heartbeat waits', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      const heartbeat = store.holdNextCall();

      sut.trigger();
      await store.callsReceived(2);
      await accept(records('s1', 'b'));

      expect(backlog.size('s1')).toBe(2);
      heartbeat.resolve();
      await idle();
      expect(store.heartbeats).toBe(1);
    });

    it('writes back every session, in memory and on disk only, once the probe finds the database back', async () => {
      build({ cap: 2 });
      store.goDown();
      await accept(records('s1', 'a', 'b'));
      await accept(records('s2', 'c', 'd', 'e'));
      store.heal();

      sut.trigger();
      await idle();

      expect(store.contents('s1')).toEqual(['a', 'b']);
      expect(store.contents('s2')).toEqual(['c', 'd', 'e']);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(health.isFailing).toBe(false);
      expect(lines('log')).toEqual([
        'Database writable again; writing back 4 pending message(s) of 2 session(s)',
      ]);
    });

    it('writes back without a probe while the database is believed healthy', async () => {
      build({ cap: 0 });
      store.goDown();
      await accept(records('s1', 'a'));
      store.heal();
      health.succeeded();

      sut.trigger();
      await idle();

      expect(store.heartbeats).toBe(0);
      expect(store.contents()).toEqual(['a']);
      expect(lines('log')).toEqual([]);
    });

    it('leaves the probe to whoever holds it', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      store.heal();
      const held = deferred();
      const lease = health.tryProbe(
        () => held.promise,
        () => Promise.resolve(),
      );

      sut.trigger();
      await idle();

      expect(store.heartbeats).toBe(0);
      expect(store.rows).toEqual([]);
      expect(spool.adoptCalls).toBe(0);
      held.resolve();
      await lease;
    });

    it('hands the probe back after a failed heartbeat', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      sut.trigger();
      await idle();

      expect(await leaseFree()).toBe(true);
    });

    it('hands the probe back after a heartbeat that found the database back', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      store.heal();
      sut.trigger();
      await idle();
      health.failed('s1', new Error('down again'), 0);

      expect(await leaseFree()).toBe(true);
    });

    it('runs one retry at a time', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      const heartbeat = store.holdNextCall();

      sut.trigger();
      sut.trigger();
      await store.callsReceived(2);
      heartbeat.resolve();
      await idle();
      expect(store.heartbeats).toBe(1);

      sut.trigger();
      await idle();
      expect(store.heartbeats).toBe(2);
    });

    it('keeps track of the retry under way when triggered again meanwhile', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      const heartbeat = store.holdNextCall();
      sut.trigger();
      await store.callsReceived(2);
      sut.trigger();
      let closed = false;

      const closing = sut.shutdown().then(() => (closed = true));
      await idle();

      expect(closed).toBe(false);
      heartbeat.resolve();
      await closing;
    });

    describe('on SpoolRetryRequested (SpoolService.retryNow)', () => {
      it('listens to the event under its stable name', () => {
        const listeners = Reflect.getMetadata(
          EVENT_LISTENER_METADATA,
          // The decorator keeps its metadata on the method itself; nothing calls it here.
          // eslint-disable-next-line @typescript-eslint/unbound-method
          TranscriptRecovery.prototype.retryRequested,
        ) as { event: string }[];

        expect(listeners.map(({ event }) => event)).toEqual([SPOOL_RETRY_REQUESTED_EVENT]);
      });

      it('runs the background retry now, without waiting for the interval', async () => {
        store.goDown();
        await accept(records('s1', 'a'));
        store.heal();
        await idle();
        expect(store.contents()).toEqual([]);

        sut.retryRequested();
        await idle();

        expect(store.heartbeats).toBe(1);
        expect(store.contents()).toEqual(['a']);
      });

      it('starts one retry when asked twice while one runs', async () => {
        store.goDown();
        await accept(records('s1', 'a'));
        const heartbeat = store.holdNextCall();

        sut.retryRequested();
        sut.retryRequested();
        await store.callsReceived(2);
        heartbeat.resolve();
        await idle();

        expect(store.heartbeats).toBe(1);
      });

      it('starts none once shutdown began', async () => {
        store.goDown();
        await accept(records('s1', 'a'));
        await sut.shutdown();
        const heartbeats = store.heartbeats;

        sut.retryRequested();
        await idle();

        expect(store.heartbeats).toBe(heartbeats);
      });
    });

    it('logs a retry that failed, and runs the next one', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      store.heal();
      health.succeeded();
      spool.adoptError = new Error('bug in the journal');

      sut.trigger();
      await idle();

      expect(lines('error')).toEqual(['Background retry failed: bug in the journal']);
      expect(store.rows).toEqual([]);
      spool.adoptError = null;
      sut.trigger();
      await idle();
      expect(store.contents()).toEqual(['a']);
    });

    it('journals what memory alone holds once the disk takes it, even while the database still fails', async () => {
      store.goDown();
      spool.failDisk();
      const [a] = records('s1', 'a');
      await accept([a]);
      spool.healDisk();

      sut.trigger();
      await idle();

      expect(spool.owedRecords()).toEqual([a]);
      expect(backlog.totalBuffered).toBe(0);
      expect(backlog.size('s1')).toBe(1);
    });

    it('gives the journal its turn to write a vanished segment again while the database fails, with nothing buffered', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      expect(backlog.totalBuffered).toBe(0);
      const calls = spool.rejournalCalls;

      sut.trigger();
      await idle();

      expect(spool.rejournalCalls).toBe(calls + 1);
    });

    it("leaves a vanished segment's records alone while the database reports its disk full", async () => {
      store.goDown('database or disk is full', 'SQLITE_FULL');
      await accept(records('s1', 'a'));
      const calls = spool.rejournalCalls;

      sut.trigger();
      await idle();

      expect(spool.rejournalCalls).toBe(calls);
    });

    it('writes what memory alone holds back without journaling it when the database takes it', async () => {
      store.goDown();
      spool.failDisk();
      await accept(records('s1', 'a'));
      spool.healDisk();
      store.heal();
      const appends = spool.appendCalls;

      sut.trigger();
      await idle();

      // On a disk shared with the database, journal copies would take the space the write needs.
      expect(spool.appendCalls).toBe(appends);
      expect(store.contents()).toEqual(['a']);
      expect(backlog.total).toBe(0);
    });

    it('leaves what memory alone holds in memory while the database reports its disk full: the database gets the space first', async () => {
      store.goDown('database or disk is full', 'SQLITE_FULL');
      spool.failDisk();
      const [a] = records('s1', 'a');
      await accept([a]);
      spool.healDisk();
      const appends = spool.appendCalls;

      sut.trigger();
      await idle();

      expect(spool.appendCalls).toBe(appends);
      expect(backlog.totalBuffered).toBe(1);
      store.heal();
      sut.trigger();
      await idle();
      expect(store.contents()).toEqual(['a']);
      expect(spool.appendCalls).toBe(appends);
    });

    it('journals what memory alone holds and the write-back could not store', async () => {
      store.goDown();
      spool.failDisk();
      const [a] = records('s1', 'a');
      await accept([a]);
      spool.healDisk();
      store.heal();
      store.failingIds.add(a.id);

      sut.trigger();
      await idle();

      expect(store.rows).toEqual([]);
      expect(spool.owedRecords()).toEqual([a]);
      expect(backlog.totalBuffered).toBe(0);
    });

    describe('of an idle instance', () => {
      let clock: number;
      beforeEach(() => {
        clock = 5_000_000;
        health = new DatabaseHealth({ isReady: true }, true, () => clock, logger);
        sut = recovery(RETRY_MS, IDLE_PROBE_MS);
      });

      it(`probes a database believed healthy once nothing has written for ${IDLE_PROBE_MS} ms`, async () => {
        clock += IDLE_PROBE_MS - 1;
        sut.trigger();
        await idle();
        expect(store.heartbeats).toBe(0);

        clock += 1;
        sut.trigger();
        await idle();
        expect(store.heartbeats).toBe(1);
        expect(health.isFailing).toBe(false);
        expect(lines('log')).toEqual([]);

        // The heartbeat was an answer: quiet again from here.
        clock += IDLE_PROBE_MS - 1;
        sut.trigger();
        await idle();
        expect(store.heartbeats).toBe(1);
      });

      it('finds an outage no write has met: the database is failing, and the log says so', async () => {
        store.goDown();
        clock += IDLE_PROBE_MS;

        sut.trigger();
        await idle();

        expect(store.heartbeats).toBe(1);
        expect(health.isFailing).toBe(true);
        expect(health.status().lastError).toBe('connection refused');
        expect(
          logger.messages('error').filter((line) => String(line).startsWith('Database ')),
        ).toEqual([
          'Database not writable (connection refused); 0 message(s) pending in memory, 0 session(s) with messages on disk only',
        ]);
        // Nothing else is tried while it fails.
        expect(spool.adoptCalls).toBe(0);
      });

      it('never probes with DB_IDLE_PROBE_MS=0', async () => {
        sut = recovery(RETRY_MS, 0);
        store.goDown();
        clock += 3_600_000;
        sut.trigger();
        await idle();
        expect(store.heartbeats).toBe(0);
        expect(health.isFailing).toBe(false);
      });

      it('does not probe while writes come back', async () => {
        clock += IDLE_PROBE_MS;
        health.succeeded('s1');
        sut.trigger();
        await idle();
        expect(store.heartbeats).toBe(0);
      });
    });

    it('takes over the journals of gone instances every 30 seconds', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
      const start = new Date('2030-01-01T00:00:00Z').getTime();
      jest.setSystemTime(start);
      await sut.replayAtBoot();
      const [orphan] = records('gone', 'left behind');
      spool.leaveOrphans([orphan]);

      jest.setSystemTime(start + 29_999);
      sut.trigger();
      await idle();
      expect(spool.adoptCalls).toBe(1);
      expect(store.rows).toEqual([]);

      jest.setSystemTime(start + 30_000);
      sut.trigger();
      await idle();
      expect(spool.adoptCalls).toBe(2);
      expect(store.rows).toEqual([orphan]);

      jest.setSystemTime(start + 59_999);
      sut.trigger();
      await idle();
      expect(spool.adoptCalls).toBe(2);
    });
  });

  describe('start', () => {
    it('retries every interval once started', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
      store.goDown();
      await accept(records('s1', 'a'));

      sut.start();
      await jest.advanceTimersByTimeAsync(RETRY_MS - 1);
      await idle();
      expect(store.heartbeats).toBe(0);
      await jest.advanceTimersByTimeAsync(1);
      await idle();
      expect(store.heartbeats).toBe(1);
      await jest.advanceTimersByTimeAsync(RETRY_MS);
      await idle();
      expect(store.heartbeats).toBe(2);
    });

    it('does not retry in the background with an interval of 0', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
      build({ retryIntervalMs: 0 });

      sut.start();

      expect(jest.getTimerCount()).toBe(0);
    });

    it('does not keep the process alive', () => {
      const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout');
      const before = timers().length;

      sut.start();

      expect(timers()).toHaveLength(before);
    });
  });

  describe('shutdown', () => {
    it('stops the background retry', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
      sut.start();
      expect(jest.getTimerCount()).toBe(1);

      await sut.shutdown();

      expect(jest.getTimerCount()).toBe(0);
    });

    it('waits for a retry under way', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      const heartbeat = store.holdNextCall();
      sut.trigger();
      await store.callsReceived(2);
      let closed = false;

      const closing = sut.shutdown().then(() => (closed = true));
      await idle();
      expect(closed).toBe(false);

      heartbeat.resolve();
      await closing;
      expect(closed).toBe(true);
    });

    it('writes back the sessions memory holds when the database takes writes; those with records on disk only wait for the next start', async () => {
      store.goDown();
      await accept(records('s1', 'a', 'b'));
      await accept(records('s2', 'c', 'd', 'e', 'f', 'g', 'h'));
      expect(spool.journalOnlyContents('s2')).toEqual(['c']);
      store.heal();

      await sut.shutdown();

      expect(store.heartbeats).toBe(1);
      expect(store.contents()).toEqual(['a', 'b']);
      expect(backlog.size('s2')).toBe(5);
      expect(spool.owedRecords('s2')).toHaveLength(6);
      expect(lines('log')).toContain(
        `Shutdown: 5 pending message(s) left in the journal at ${SPOOL_DIR}`,
      );
    });

    it('writes back without a probe while the database is believed healthy', async () => {
      store.goDown();
      await accept(records('s1', 'a'));
      store.heal();
      health.succeeded();

      await sut.shutdown();

      expect(store.heartbeats).toBe(0);
      expect(store.contents()).toEqual(['a']);
    });

    it('writes nothing when the probe finds the database still failing', async () => {
      store.goDown();
      await accept(records('s1', 'a'));

      await sut.shutdown();

      expect(store.heartbeats).toBe(1);
      expect(store.writeCalls).toHaveLength(1);
      expect(lines('log')).toEqual([
        `Shutdown: 1 pending message(s) left in the journal at ${SPOOL_DIR}`,
      ]);
    });

    it('does not probe when memory holds nothing', async () => {
      build({ cap: 0 });
      store.goDown();
      await accept(records('s1', 'a'));

      await sut.shutdown();

      expect(store.heartbeats).toBe(0);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
    });

    it('journals what memory alone holds', async () => {
      store.goDown();
      spool.failDisk();
      const batch = records('s1', 'a', 'b');
      await accept(batch);
      spool.healDisk();

      await sut.shutdown();

      expect(spool.owedRecords()).toEqual(batch);
      expect(await total(metrics.messagesDropped)).toBe(0);
      expect(lines('log')).toEqual([
        `Shutdown: 2 pending message(s) left in the journal at ${SPOOL_DIR}`,
      ]);
    });

    it('counts what memory alone holds and the disk does not take as lost', async () => {
      store.goDown();
      await accept(records('s1', 'journaled'));
      spool.failDisk();
      await accept([...records('s1', 'lost-1'), ...records('s2', 'lost-2')]);

      await sut.shutdown();

      expect(await total(metrics.messagesDropped)).toBe(2);
      expect(lines('error')).toEqual([
        `Shutdown: 1 pending message(s) left in the journal at ${SPOOL_DIR}; 2 held in memory only (BUFFERED) could not be journaled and are lost`,
      ]);
      expect(lines('log')).toEqual([]);
    });
  });
});
