import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { type Counter } from 'prom-client';
import { describeError } from '../common/errors/describe-error.js';
import { Failpoints } from '../common/failpoints.js';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { deferred } from '../common/testing/deferred.js';
import { type SessionWrite } from '../database/message-store.js';
import { MessagesStored, WriteFailed } from '../message/message-events.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { type Progress, type WriteAttempt, type WriteOutcome } from '../message/outcomes.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { DatabaseHealth } from '../database/database-health.js';
import { HeldMoves } from './held-moves.js';
import { JournalReplay } from './journal-replay.js';
import { WriteReports } from './write-reports.js';
import { DurableWriter, type BacklogPruner } from './durable-writer.js';
import { SessionBacklog, type Backlog } from './session-backlog.js';
import { FakeMessageStore, classifyFakeError, writerOver } from './testing/fake-message-store.js';
import { FakeSessionQueries } from './testing/fake-session-queries.js';
import { ID_STORED_ELSEWHERE, StoredElsewhere } from './stored-elsewhere.js';
import { FakeSpool } from './testing/fake-spool.js';

const SPOOL_DIR = '/fake/pending_messages';

const STORED: WriteOutcome = { kind: 'accepted', status: AppendStatus.PERSISTED, skipped: [] };
const QUEUED: WriteOutcome = { kind: 'accepted', status: AppendStatus.QUEUED, skipped: [] };

function records(sessionId: string, ...contents: string[]): MessageRecord[] {
  return contents.map((content) => acceptedRecord(sessionId, content));
}

function numbered(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}${index}`);
}

async function total(counter: Counter): Promise<number> {
  return (await counter.get()).values.reduce((sum, value) => sum + value.value, 0);
}

const spooledLine = (sessionId: string, cap: number, record: MessageRecord) =>
  `pending queue full for ${sessionId} (cap=${cap}); spooled oldest message to ${SPOOL_DIR} for replay after DB recovery (message ${record.id})`;

const droppedLine = (sessionId: string, cap: number, record: MessageRecord) =>
  `pending queue full for ${sessionId} (cap=${cap}): dropping oldest message to make room (on-disk spool unavailable); lost message ${record.id}`;

/**
 * A writer that refuses write-backs as a whole, which the real one never does: with
 * isolateRefusals it stores the rest and lists the refused records. Stands for a writer that
 * breaks that promise.
 */
class WholeRefusingWriter extends CoalescingWriter {
  override submit(
    write: SessionWrite,
    options: { isolateRefusals?: boolean } = {},
  ): Promise<WriteAttempt> {
    if (options.isolateRefusals) {
      return Promise.resolve({ kind: 'refused', reason: 'refused as a whole' });
    }
    return super.submit(write, options);
  }
}

/**
 * Stands for SessionEraser.prune: records what the write path looked like when asked, then
 * answers false (it cannot tell), or drops the `dropHeld` oldest entries of the backlog (letting
 * go of their journal lines) and has the journal forget its journal-only records up to
 * `forgetUpTo`, and answers true.
 */
class FakePruner implements BacklogPruner {
  readonly asked: {
    sessionId: string;
    held: number;
    journalOnly: boolean;
    writes: number;
    drains: number;
  }[] = [];
  answer = true;
  dropHeld = 0;
  forgetUpTo: number | undefined;

  constructor(
    private readonly spool: FakeSpool,
    private readonly store: FakeMessageStore,
  ) {}

  async prune(backlog: Backlog): Promise<Progress> {
    this.asked.push({
      sessionId: backlog.sessionId,
      held: backlog.size,
      journalOnly: this.spool.hasJournalOnly(backlog.sessionId),
      writes: this.store.writeCalls.length,
      drains: this.spool.batchCalls.length,
    });
    if (!this.answer) return 'stopped';
    const dropped = backlog.shift(this.dropHeld);
    await this.spool.resolve(
      dropped.flatMap(({ record, location }) => (location ? [{ record, location }] : [])),
    );
    if (this.forgetUpTo !== undefined) await this.spool.forget(backlog.sessionId, this.forgetUpTo);
    return 'done';
  }
}

describe(DurableWriter.name, () => {
  let store: FakeMessageStore;
  // The write-back's reads of whose a skipped id is (StoredElsewhere).
  let queries: FakeSessionQueries;
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
  let events: EventEmitter2;
  let backlog: SessionBacklog;
  let storedEvents: MessagesStored[];
  let failedWrites: string[];
  let moves: HeldMoves;
  let sut: DurableWriter;

  function build({
    cap = 5,
    backgroundRetry = false,
    writer = writerOver(store),
    pruner = undefined as BacklogPruner | undefined,
  } = {}): void {
    health = new DatabaseHealth({ isReady: true }, backgroundRetry, () => 0, logger);
    moves = new HeldMoves();
    const reports = new WriteReports(health, events, metrics);
    queries = new FakeSessionQueries(store);
    const elsewhere = new StoredElsewhere(queries.asQueries);
    sut = new DurableWriter(
      writer,
      spool.asService,
      spool.asIndex,
      spool.asJournal,
      health,
      reports,
      new JournalReplay(writer, spool.asJournal, moves, reports, elsewhere),
      metrics,
      cap,
      new Failpoints(),
      moves,
      elsewhere,
      pruner,
    );
  }

  beforeEach(() => {
    store = new FakeMessageStore();
    spool = new FakeSpool();
    logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    metrics = new MetricsService();
    events = new EventEmitter2();
    backlog = new SessionBacklog();
    storedEvents = [];
    failedWrites = [];
    events.on(MessagesStored.event, (event: MessagesStored) => storedEvents.push(event));
    events.on(WriteFailed.event, (event: WriteFailed) => failedWrites.push(event.sessionId));
    build();
  });

  afterEach(() => {
    // The write path never resolves or releases what the journal does not owe.
    expect(spool.misuses).toEqual([]);
  });

  /** Accepts `batch` as one append of its session. */
  function accept(batch: MessageRecord[]): Promise<WriteOutcome> {
    return backlog.withSession(batch[0].sessionId, (backlog) => sut.accept(backlog, batch));
  }

  /** One append per record, in order; the status of each (an outcome of another kind whole). */
  async function acceptEach(batch: MessageRecord[]): Promise<(AppendStatus | WriteOutcome)[]> {
    const statuses: (AppendStatus | WriteOutcome)[] = [];
    for (const record of batch) {
      const outcome = await accept([record]);
      const plain = outcome.kind === 'accepted' && outcome.skipped.length === 0;
      statuses.push(plain ? outcome.status : outcome);
    }
    return statuses;
  }

  const flush = (sessionId: string) =>
    backlog.withSession(sessionId, (backlog) => sut.flush(backlog));

  const pending = (sessionId: string) =>
    backlog.withSession(sessionId, async (backlog) => backlog.peek(Infinity));

  const pendingContents = async (sessionId: string) =>
    (await pending(sessionId)).map((entry) => entry.record.content);

  /** Lines the writer itself logged (the health's lines carry no context). */
  const writerLines = (level: string) =>
    logger.lines
      .filter((line) => line.level === level && line.params.at(-1) === 'DurableWriter')
      .map((line) => line.message);

  describe('accept', () => {
    it('stores fresh messages at once when the database takes them', async () => {
      const batch = records('s1', 'a', 'b');

      expect(await accept(batch)).toEqual(STORED);

      expect(store.contents()).toEqual(['a', 'b']);
      expect(spool.appendCalls).toBe(0);
      expect(backlog.total).toBe(0);
      expect(storedEvents).toEqual([new MessagesStored('s1', batch, 2)]);
      expect(failedWrites).toEqual([]);
    });

    it('journals fresh messages the database fails to take: queued, held in memory with their place on disk', async () => {
      store.goDown();
      const [a] = records('s1', 'a');

      expect(await accept([a])).toEqual(QUEUED);

      expect(store.rows).toEqual([]);
      expect(spool.owedRecords()).toEqual([a]);
      const [entry] = await pending('s1');
      expect(entry.record).toBe(a);
      expect(entry.location).toEqual(expect.objectContaining({ segment: 'own-segment' }));
      expect(backlog.totalBuffered).toBe(0);
      expect(health.isFailing).toBe(true);
      expect(await total(metrics.dbWriteFailures)).toBe(1);
      expect(failedWrites).toEqual(['s1']);
      expect(logger.messages('warn')).toEqual([
        'Database write for session s1 failed (1 consecutive failure(s), 1 pending): connection refused',
      ]);
    });

    it('holds fresh messages in memory only when neither the database nor the disk takes them: buffered', async () => {
      store.goDown();
      spool.failDisk();

      expect(await acceptEach(records('s1', 'a'))).toEqual([AppendStatus.BUFFERED]);

      expect(spool.owedRecords()).toEqual([]);
      expect((await pending('s1')).map((entry) => entry.location)).toEqual([null]);
      expect(backlog.totalBuffered).toBe(1);
    });

    it('answers conflict with the records another acceptance stored first, and is no outage', async () => {
      const [mine, other] = records('s1', 'retried', 'new');
      const storedFirst = { ...mine, orderKey: '0', content: 'retried' };
      store.storedElsewhere(storedFirst);

      expect(await accept([mine, other])).toEqual({
        kind: 'accepted',
        status: AppendStatus.PERSISTED,
        skipped: [mine],
      });

      expect(store.rows).toEqual([storedFirst, other]);
      expect(health.isFailing).toBe(false);
      expect(await total(metrics.dbWriteFailures)).toBe(0);
      expect(storedEvents).toEqual([new MessagesStored('s1', [other], 1)]);
      expect(backlog.total).toBe(0);
    });

    it('announces nothing when everything was stored before', async () => {
      const [mine] = records('s1', 'retried');
      store.storedElsewhere(mine);

      expect(await accept([mine])).toEqual({
        kind: 'accepted',
        status: AppendStatus.PERSISTED,
        skipped: [mine],
      });

      expect(storedEvents).toEqual([]);
    });

    it('answers refused when the database refuses fresh messages, keeping nothing of them', async () => {
      const [good, bad] = records('s1', 'good', 'bad');
      store.refusingIds.add(bad.id);

      expect(await accept([good, bad])).toEqual({ kind: 'refused', reason: 'refused bad' });

      expect(store.rows).toEqual([]);
      expect(spool.appendCalls).toBe(0);
      expect(backlog.total).toBe(0);
      expect(health.isFailing).toBe(false);
      expect(await total(metrics.dbWriteFailures)).toBe(0);
      expect(failedWrites).toEqual([]);
    });

    it('writes what the session holds before the fresh messages, in acceptance order', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a', 'b'));
      store.heal();

      expect(await acceptEach(records('s1', 'c'))).toEqual([AppendStatus.PERSISTED]);

      expect(store.contents()).toEqual(['a', 'b', 'c']);
      expect(store.writeCalls.slice(2).map((ids) => ids.length)).toEqual([2, 1]);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(health.isFailing).toBe(false);
      expect(health.status().consecutiveFailures).toEqual(new Map());
      expect(writerLines('log')).toEqual(['Database writable again; writing back what is pending']);
      expect(storedEvents.map((event) => event.messages.map((m) => m.content))).toEqual([
        ['a', 'b'],
        ['c'],
      ]);
      expect(storedEvents.map((event) => event.revision)).toEqual([2, 3]);
    });

    it('marks only the fresh messages as answered by their write: replays and write-back keep their keys', async () => {
      build({ cap: 1 });
      store.goDown();
      await acceptEach(records('s1', 'c0', 'c1', 'c2'));
      store.heal();
      const marks: [string[], unknown][] = [];
      const write = store.write.bind(store);
      store.write = (writes) => {
        for (const one of writes) marks.push([one.records.map((r) => r.content), one.after]);
        return write(writes);
      };

      expect(await acceptEach(records('s1', 'fresh'))).toEqual([AppendStatus.PERSISTED]);

      // The journal's records, then memory's, then the append (see SessionWrite.after).
      expect(marks).toEqual([
        [['c0', 'c1'], undefined],
        [['c2'], undefined],
        [['fresh'], 'stored'],
      ]);
    });

    it('journals fresh messages behind a backlog it cannot write, without trying them', async () => {
      store.goDown();
      const [a, b] = records('s1', 'a', 'b');
      await accept([a]);

      expect(await accept([b])).toEqual(QUEUED);

      // The second append tried the backlog only: the fresh message must not overtake it.
      expect(store.writeCalls).toEqual([[a.id], [a.id]]);
      expect(await pendingContents('s1')).toEqual(['a', 'b']);
      expect(logger.messages('warn')[1]).toBe(
        'Database write for session s1 failed (2 consecutive failure(s), 1 pending): connection refused',
      );
      expect(await total(metrics.dbWriteFailures)).toBe(2);
    });

    it('journals at once, without trying the database, while the background retry probes it', async () => {
      build({ backgroundRetry: true });
      store.goDown();

      expect(await acceptEach(records('s1', 'a', 'b'))).toEqual([
        AppendStatus.QUEUED,
        AppendStatus.QUEUED,
      ]);

      expect(store.writeCalls).toHaveLength(1);
      expect(await total(metrics.dbWriteFailures)).toBe(1);
      expect(failedWrites).toEqual(['s1']);
      expect(logger.messages('warn')[1]).toBe(
        'Database write for session s1 not tried, the database is failing (2 consecutive failure(s), 2 pending): connection refused',
      );
      expect(await pendingContents('s1')).toEqual(['a', 'b']);
    });

    it('lets one append at a time probe a failing database; the others journal at once', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      const probeHeld = store.holdNextCall();

      const probing = acceptEach(records('s1', 'b'));
      await store.callsReceived(2);
      expect(await acceptEach(records('s2', 'x'))).toEqual([AppendStatus.QUEUED]);
      expect(store.writeCalls).toHaveLength(2);
      probeHeld.resolve();
      expect(await probing).toEqual([AppendStatus.QUEUED]);

      // The probe was handed back: the next append probes again.
      await acceptEach(records('s2', 'y'));
      expect(store.writeCalls).toHaveLength(3);
    });

    it('ends the outage when a probing append finds the database back', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();

      expect(await acceptEach(records('s2', 'b'))).toEqual([AppendStatus.PERSISTED]);

      expect(health.isFailing).toBe(false);
      expect(await acceptEach(records('s1', 'c'))).toEqual([AppendStatus.PERSISTED]);
      expect(store.contents()).toEqual(['b', 'a', 'c']);
    });
  });

  describe('the pending cap (spool on drop)', () => {
    it('drop, spool, drain: past the cap the oldest leave memory for the journal, and the next successful append stores everything in acceptance order', async () => {
      build({ cap: 5 });
      store.goDown();
      const messages = records('sess-1', ...numbered('msg', 8));

      expect(await acceptEach(messages)).toEqual(Array(8).fill(AppendStatus.QUEUED));

      // The 3 oldest left memory: spooled, not lost, each with a WARN naming the spool.
      expect(writerLines('warn')).toEqual(
        messages.slice(0, 3).map((record) => spooledLine('sess-1', 5, record)),
      );
      expect(spool.journalOnlyContents('sess-1')).toEqual(['msg0', 'msg1', 'msg2']);
      expect(await pendingContents('sess-1')).toEqual(numbered('msg', 8).slice(3));
      expect(spool.owedRecords()).toEqual(messages);
      expect(spool.appendCalls).toBe(8);
      expect(await total(metrics.messagesDropped)).toBe(0);

      store.heal();
      expect(await acceptEach(records('sess-1', 'recovered'))).toEqual([AppendStatus.PERSISTED]);

      expect(store.contents()).toEqual([...numbered('msg', 8), 'recovered']);
      expect(spool.owedRecords()).toEqual([]);
      expect(spool.hasJournalOnly('sess-1')).toBe(false);
      expect(backlog.size('sess-1')).toBe(0);
      // Appends 7 and 8 tried the drain too, during the outage (one batch each); the last
      // drain stored its batch, then asked for the next and found none left.
      expect(spool.batchCalls).toEqual(Array(4).fill({ sessionId: 'sess-1', batchSize: 1000 }));
    });

    it('drains only the session it writes', async () => {
      build({ cap: 3 });
      store.goDown();
      for (let i = 0; i < 4; i++) {
        await acceptEach(records('sess-a', `a${i}`));
        await acceptEach(records('sess-b', `b${i}`));
      }
      expect(spool.journalOnlyContents('sess-a')).toEqual(['a0']);
      expect(spool.journalOnlyContents('sess-b')).toEqual(['b0']);

      store.heal();
      await acceptEach(records('sess-a', 'go-a'));

      expect(store.contents('sess-a')).toEqual(['a0', 'a1', 'a2', 'a3', 'go-a']);
      expect(store.contents('sess-b')).toEqual([]);
      expect(spool.sessionsWithJournalOnly()).toEqual(['sess-b']);
      expect(spool.journalOnlyContents('sess-b')).toEqual(['b0']);
      expect(spool.owedRecords('sess-b').map((record) => record.content)).toEqual(numbered('b', 4));
      expect(await pendingContents('sess-b')).toEqual(['b1', 'b2', 'b3']);
      expect(spool.batchCalls.map((call) => call.sessionId)).toEqual(['sess-a', 'sess-a']);
    });

    it('degrades to dropping the oldest (BUFFERED, counted, WARN) when the spool cannot be written, and does not drain afterwards', async () => {
      build({ cap: 4 });
      store.goDown();
      spool.failDisk();
      const messages = records('sess-x', ...numbered('msg', 9));

      expect(await acceptEach(messages)).toEqual(Array(9).fill(AppendStatus.BUFFERED));

      expect(backlog.size('sess-x')).toBe(4);
      expect(backlog.totalBuffered).toBe(4);
      expect(spool.owedRecords()).toEqual([]);
      expect(spool.hasJournalOnly('sess-x')).toBe(false);
      expect(writerLines('warn')).toEqual(
        messages.slice(0, 5).map((record) => droppedLine('sess-x', 4, record)),
      );
      expect(await total(metrics.messagesDropped)).toBe(5);

      store.heal();
      expect(await acceptEach(records('sess-x', 'fin'))).toEqual([AppendStatus.PERSISTED]);

      expect(store.contents()).toEqual(['msg5', 'msg6', 'msg7', 'msg8', 'fin']);
      expect(spool.batchCalls).toEqual([]);
    });

    it('keeps the journal records when their replay fails, and the session stays marked as having records on disk only', async () => {
      build({ cap: 3 });
      store.goDown();
      const messages = records('sess-r', ...numbered('m', 5));
      await acceptEach(messages);
      expect(spool.journalOnlyContents('sess-r')).toEqual(['m0', 'm1']);

      // The database heals for live writes only: the replayed messages still fail.
      store.heal();
      for (const record of messages.slice(0, 3)) store.failingIds.add(record.id);
      // This append pushes the backlog over the cap again (m2 leaves memory) after the drain failed.
      expect(await acceptEach(records('sess-r', 'go'))).toEqual([AppendStatus.QUEUED]);

      expect(store.rows).toEqual([]);
      expect(spool.journalOnlyContents('sess-r')).toEqual(['m0', 'm1', 'm2']);
      expect(spool.sessionsWithJournalOnly()).toEqual(['sess-r']);
      expect(spool.owedRecords('sess-r')).toHaveLength(6);
      expect(await pendingContents('sess-r')).toEqual(['m3', 'm4', 'go']);
    });

    it('journals an evicted message held in memory only when the disk takes it again', async () => {
      build({ cap: 2 });
      store.goDown();
      spool.failDisk();
      const [a, b, c] = records('s1', 'a', 'b', 'c');
      expect(await acceptEach([a])).toEqual([AppendStatus.BUFFERED]);
      spool.healDisk();

      expect(await acceptEach([b, c])).toEqual([AppendStatus.QUEUED, AppendStatus.QUEUED]);

      expect(writerLines('warn')).toEqual([spooledLine('s1', 2, a)]);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      expect(backlog.totalBuffered).toBe(0);
      expect(await total(metrics.messagesDropped)).toBe(0);

      store.heal();
      await acceptEach(records('s1', 'd'));
      expect(store.contents()).toEqual(['a', 'b', 'c', 'd']);
    });

    it('keeps an evicted message where a read finds it, in memory or in the journal, while it is journaled', async () => {
      build({ cap: 2 });
      store.goDown();
      spool.failDisk();
      const [a, b, c] = records('s1', 'a', 'b', 'c');
      await acceptEach([a]);
      spool.healDisk();
      // What a reader sees just as each journal write completes, before the writer goes on.
      const seen: string[][] = [];
      const append = spool.append.bind(spool);
      spool.append = async (batch) => {
        const outcome = await append(batch);
        seen.push([
          ...spool.journalOnlyContents('s1'),
          ...backlog.of('s1').map(({ record }) => record.content),
        ]);
        return outcome;
      };

      await acceptEach([b, c]);

      expect(seen.every((contents) => contents.includes('a'))).toBe(true);
      expect(seen).toHaveLength(3);
      expect(backlog.totalBuffered).toBe(0);
    });

    it('decides for each evicted message: dropped when held in memory only, spooled when journaled', async () => {
      build({ cap: 2 });
      store.goDown();
      spool.failDisk();
      const [a, b, c, d] = records('s1', 'a', 'b', 'c', 'd');
      await acceptEach([a]);
      spool.healDisk();
      await acceptEach([b]);
      spool.failDisk();

      expect(await acceptEach([c, d])).toEqual([AppendStatus.BUFFERED, AppendStatus.BUFFERED]);

      expect(writerLines('warn')).toEqual([droppedLine('s1', 2, a), spooledLine('s1', 2, b)]);
      expect(await total(metrics.messagesDropped)).toBe(1);
      expect(spool.journalOnlyContents('s1')).toEqual(['b']);
      expect(await pendingContents('s1')).toEqual(['c', 'd']);
    });

    it('asks the disk again only for evicted messages held in memory only', async () => {
      build({ cap: 1 });
      store.goDown();

      await acceptEach(records('s1', 'a', 'b', 'c'));

      expect(spool.appendCalls).toBe(3);
    });
  });

  describe('flush', () => {
    it('has nothing to do without a backlog, even while the database fails', async () => {
      build({ backgroundRetry: true });
      health.failed('idle', new Error('down'), 0);

      expect(await flush('idle')).toBe('done');

      expect(store.writeCalls).toEqual([]);
    });

    it('writes the backlog oldest first, lets go of its journal records, and is done', async () => {
      store.goDown();
      const batch = records('s1', 'a', 'b');
      await acceptEach(batch);
      store.heal();

      expect(await flush('s1')).toBe('done');

      expect(store.contents()).toEqual(['a', 'b']);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(storedEvents).toEqual([new MessagesStored('s1', batch, 2)]);
      expect(health.status().consecutiveFailures).toEqual(new Map());
    });

    it('stops at the first failure, keeping everything, and counts it as a failed write', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a', 'b'));

      expect(await flush('s1')).toBe('stopped');

      expect(await pendingContents('s1')).toEqual(['a', 'b']);
      expect(spool.owedRecords().map((record) => record.content)).toEqual(['a', 'b']);
      expect(await total(metrics.dbWriteFailures)).toBe(3);
      expect(failedWrites).toEqual(['s1', 's1', 's1']);
      expect(logger.messages('error')).toEqual([
        'Database write for session s1 failed (3 consecutive failure(s), 2 pending): connection refused',
      ]);
    });

    it('does not try while something else probes the failing database', async () => {
      build({ backgroundRetry: true });
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();

      expect(await flush('s1')).toBe('stopped');

      expect(store.writeCalls).toHaveLength(1);
    });

    it('hands the probe back once done', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));

      await flush('s1');

      expect(health.isFailing).toBe(true);
      expect(await leaseFree()).toBe(true);
    });

    it('writes a long backlog 1000 records a transaction', async () => {
      build({ cap: 5000 });
      store.goDown();
      const batch = records('s1', ...numbered('m', 1001));
      await accept(batch);
      store.heal();

      expect(await flush('s1')).toBe('done');

      expect(store.writeCalls.slice(1)).toEqual([
        batch.slice(0, 1000).map((record) => record.id),
        [batch[1000].id],
      ]);
      expect(store.rows).toEqual(batch);
    });

    it('replays what only the disk holds first, in the order it was spooled, then what memory holds', async () => {
      build({ cap: 1 });
      store.goDown();
      const [c0, c1, c2] = records('s', 'c0', 'c1', 'c2');
      await acceptEach([c0, c1, c2]);
      expect(spool.journalOnlyContents('s')).toEqual(['c0', 'c1']);
      store.heal();

      expect(await flush('s')).toBe('done');

      expect(store.writeCalls.slice(3)).toEqual([[c0.id, c1.id], [c2.id]]);
      expect(store.contents()).toEqual(['c0', 'c1', 'c2']);
      expect(spool.owedRecords()).toEqual([]);
      expect(spool.hasJournalOnly('s')).toBe(false);
      expect(storedEvents.map((event) => event.revision)).toEqual([2, 3]);
    });

    it('drains no other session: their records stay on disk, owed', async () => {
      build({ cap: 1 });
      store.goDown();
      for (const sessionId of ['a', 'b']) await acceptEach(records(sessionId, 'old', 'new'));
      store.heal();

      expect(await flush('a')).toBe('done');

      expect(store.contents('a')).toEqual(['old', 'new']);
      expect(store.contents('b')).toEqual([]);
      expect(spool.journalOnlyContents('b')).toEqual(['old']);
      expect(spool.owedRecords('b')).toHaveLength(2);
      expect(spool.batchCalls.map((call) => call.sessionId)).toEqual(['a', 'a']);
    });

    it('counts a replay the database fails as a failed write, and stops', async () => {
      build({ cap: 1 });
      store.goDown();
      await acceptEach(records('s1', 'a', 'b'));
      expect(await total(metrics.dbWriteFailures)).toBe(2);

      expect(await flush('s1')).toBe('stopped');

      expect(await total(metrics.dbWriteFailures)).toBe(3);
      expect(failedWrites).toEqual(['s1', 's1', 's1']);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      expect(await pendingContents('s1')).toEqual(['b']);
      // The memory backlog was not tried behind the failed replay.
      expect(store.writeCalls).toHaveLength(3);
    });

    it('forgets the failures of a session whose journal-only records were all unreadable', async () => {
      build({ cap: 0 });
      store.goDown();
      const [a] = records('s1', 'a');
      await acceptEach([a]);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      spool.unreadableIds.add(a.id);
      store.heal();
      health.succeeded();

      expect(await flush('s1')).toBe('done');

      expect(store.writeCalls).toHaveLength(1);
      expect(health.status().consecutiveFailures).toEqual(new Map());
    });
  });

  describe('moves, in the turns a read of what is held waits for', () => {
    /** What a read in the moves' turns finds of session `s`, once it runs. */
    const readInTurn = () =>
      moves.read('s', async () => ({
        stored: store.contents(),
        journalOnly: spool.journalOnlyContents('s'),
        held: backlog.of('s', () => true).map(({ record }) => record.content),
      }));

    /** The next letting go of journal records waits for the returned gate; `reached` says when. */
    function holdNextResolve() {
      const reached = deferred();
      const gate = deferred();
      const resolve = spool.resolve.bind(spool);
      let held = false;
      jest.spyOn(spool, 'resolve').mockImplementation(async (records) => {
        if (records.length > 0 && !held) {
          held = true;
          reached.resolve();
          await gate.promise;
        }
        return resolve(records);
      });
      return { reached: reached.promise, release: () => gate.resolve() };
    }

    it('finds a replayed batch stored and let go of, never stored and still owed', async () => {
      build({ cap: 1 });
      store.goDown();
      await acceptEach(records('s', 'c0', 'c1', 'c2'));
      store.heal();
      const resolving = holdNextResolve();
      const flushed = flush('s');
      await resolving.reached;
      // Committed, not yet let go of: the one moment a read would count the batch twice.
      expect(store.contents()).toEqual(['c0', 'c1']);
      expect(spool.journalOnlyContents('s')).toEqual(['c0', 'c1']);

      const read = readInTurn();
      resolving.release();

      expect(await read).toEqual({ stored: ['c0', 'c1'], journalOnly: [], held: ['c2'] });
      expect(await flushed).toBe('done');
    });

    it('finds a chunk of memory stored and let go of, never stored and still held', async () => {
      const [a, refused, b] = records('s', 'a', 'x', 'b');
      store.refusingIds.add(refused.id);
      store.goDown();
      await acceptEach([a, refused, b]);
      store.heal();
      const committed = deferred();
      const gate = deferred();
      const setAside = spool.setAside.bind(spool);
      // The chunk's refusals are set aside between its commit and its leaving memory.
      jest.spyOn(spool, 'setAside').mockImplementationOnce(async (entries) => {
        committed.resolve();
        await gate.promise;
        return setAside(entries);
      });
      const flushed = flush('s');
      await committed.promise;
      expect(backlog.of('s', () => true)).toHaveLength(3);

      const read = readInTurn();
      gate.resolve();

      expect(await read).toEqual({ stored: ['a', 'b'], journalOnly: [], held: [] });
      expect(await flushed).toBe('done');
    });

    it('moves the oldest out of memory into the journal only in one turn', async () => {
      build({ cap: 1 });
      store.goDown();
      await accept(records('s', 'a'));
      const release = spool.release.bind(spool);
      const reached = deferred();
      const gate = deferred();
      jest.spyOn(spool, 'release').mockImplementationOnce(async (entries) => {
        reached.resolve();
        await gate.promise;
        return release(entries);
      });
      const accepted = accept(records('s', 'b'));
      await reached.promise;

      const read = readInTurn();
      gate.resolve();

      expect(await read).toEqual({ stored: [], journalOnly: ['a'], held: ['b'] });
      expect(await accepted).toEqual(QUEUED);
    });
  });

  describe('records the database refuses while writing back', () => {
    it('sets a refused record aside with its reason and stores the rest of the session', async () => {
      store.goDown();
      const [a, bad, c] = records('s1', 'a', 'bad', 'c');
      await acceptEach([a, bad, c]);
      const [, badEntry] = await pending('s1');
      store.heal();
      store.refusingIds.add(bad.id);

      expect(await flush('s1')).toBe('done');

      expect(store.contents()).toEqual(['a', 'c']);
      expect(spool.setAsideRecords).toEqual([
        { record: bad, reason: 'refused bad', location: badEntry.location },
      ]);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(await acceptEach(records('s1', 'd'))).toEqual([AppendStatus.PERSISTED]);
      expect(store.contents()).toEqual(['a', 'c', 'd']);
    });

    it('sets aside a refused record held in memory only, without a place on disk', async () => {
      store.goDown();
      spool.failDisk();
      const [bad] = records('s1', 'bad');
      await acceptEach([bad]);
      store.heal();
      store.refusingIds.add(bad.id);

      expect(await flush('s1')).toBe('done');

      expect(spool.setAsideRecords).toEqual([
        { record: bad, reason: 'refused bad', location: null },
      ]);
      expect(backlog.total).toBe(0);
    });

    it('sets aside a refused record replayed from disk, and stores the others', async () => {
      build({ cap: 1 });
      store.goDown();
      const [a, bad, c] = records('s1', 'a', 'bad', 'c');
      await acceptEach([a, bad, c]);
      store.heal();
      store.refusingIds.add(bad.id);

      expect(await flush('s1')).toBe('done');

      expect(store.contents()).toEqual(['a', 'c']);
      expect(spool.setAsideRecords.map((entry) => entry.record)).toEqual([bad]);
      expect(spool.owedRecords()).toEqual([]);
    });

    // Two imports held in two sessions while the database was away, with the same ids: the
    // one written back second finds them stored, as the other session's messages.
    it("sets aside a held record whose id was stored meanwhile as another session's message", async () => {
      store.goDown();
      const [a, taken, c] = records('s1', 'a', 'taken', 'c');
      await acceptEach([a, taken, c]);
      const [, takenEntry] = await pending('s1');
      store.heal();
      store.storedElsewhere({ ...taken, sessionId: 's2', content: 'theirs' });

      expect(await flush('s1')).toBe('done');

      expect(store.contents('s1')).toEqual(['a', 'c']);
      expect(spool.setAsideRecords).toEqual([
        { record: taken, reason: ID_STORED_ELSEWHERE, location: takenEntry.location },
      ]);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
    });

    it("sets aside a record replayed from disk whose id is another session's message", async () => {
      build({ cap: 1 });
      store.goDown();
      const [a, taken, c] = records('s1', 'a', 'taken', 'c');
      await acceptEach([a, taken, c]);
      store.heal();
      store.storedElsewhere({ ...taken, sessionId: 's2' });

      expect(await flush('s1')).toBe('done');

      expect(store.contents('s1')).toEqual(['a', 'c']);
      expect(spool.setAsideRecords.map(({ record, reason }) => ({ record, reason }))).toEqual([
        { record: taken, reason: ID_STORED_ELSEWHERE },
      ]);
      expect(spool.owedRecords()).toEqual([]);
    });

    it('lets go of a skipped record stored in its own session, setting nothing aside', async () => {
      store.goDown();
      const [a, b] = records('s1', 'a', 'b');
      await acceptEach([a, b]);
      store.heal();
      store.storedElsewhere(a);

      expect(await flush('s1')).toBe('done');

      expect(store.contents('s1')).toEqual(['a', 'b']);
      expect(spool.setAsideRecords).toEqual([]);
      expect(backlog.total).toBe(0);
    });

    it('keeps what it wrote back, and stops, while it cannot read whose a skipped id is', async () => {
      for (const cap of [5, 1]) {
        build({ cap });
        store.rows.length = 0;
        spool.setAsideRecords.length = 0;
        store.goDown();
        // With a cap of 1 the first is replayed from disk, the other written from memory.
        const [taken, a] = records(`cap-${cap}`, 'taken', 'a');
        await acceptEach([taken, a]);
        store.heal();
        store.storedElsewhere({ ...taken, sessionId: 'other' });
        queries.readError = new Error('connection refused');

        expect(await flush(a.sessionId)).toBe('stopped');
        expect(spool.setAsideRecords).toEqual([]);
        // Each of the two still held in memory or owed by the journal.
        const held = (await pending(a.sessionId)).map((entry) => entry.record);
        expect(new Set([...held, ...spool.owedRecords(a.sessionId)])).toEqual(new Set([a, taken]));

        queries.readError = null;
        expect(await flush(a.sessionId)).toBe('done');
        expect(store.contents(a.sessionId)).toEqual(['a']);
        expect(spool.setAsideRecords.map(({ record }) => record)).toEqual([taken]);
        expect(spool.owedRecords()).toEqual([]);
      }
    });

    it('keeps refused records, and stops, when they cannot be set aside', async () => {
      store.goDown();
      const [a, bad, c] = records('s1', 'a', 'bad', 'c');
      await acceptEach([a, bad, c]);
      store.heal();
      store.refusingIds.add(bad.id);
      spool.setAsideError = new Error('set-aside log unwritable');

      expect(await flush('s1')).toBe('stopped');

      expect(await pendingContents('s1')).toEqual(['a', 'bad', 'c']);
      expect(spool.owedRecords()).toHaveLength(3);
      expect(writerLines('error')).toEqual([
        'Could not set aside 1 refused message(s) of session s1; keeping them: set-aside log unwritable',
      ]);

      spool.setAsideError = null;
      expect(await flush('s1')).toBe('done');
      expect(store.contents()).toEqual(['a', 'c']);
      expect(spool.setAsideRecords.map((entry) => entry.record)).toEqual([bad]);
      expect(spool.owedRecords()).toEqual([]);
    });

    it('journals a fresh append behind a backlog whose refusals cannot be set aside', async () => {
      store.goDown();
      const [a, bad] = records('s1', 'a', 'bad');
      await acceptEach([a, bad]);
      store.heal();
      store.refusingIds.add(bad.id);
      spool.setAsideError = new Error('set-aside log unwritable');

      expect(await acceptEach(records('s1', 'c'))).toEqual([AppendStatus.QUEUED]);

      expect(store.contents()).toEqual(['a']);
      expect(await pendingContents('s1')).toEqual(['a', 'bad', 'c']);
    });
  });

  describe('a write-back the writer refuses as a whole', () => {
    const refusingWriter = () => new WholeRefusingWriter(store, classifyFakeError, describeError);

    it('keeps the memory backlog, and counts a failed write with the reason', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();
      build({ writer: refusingWriter() });

      expect(await flush('s1')).toBe('stopped');

      expect(await pendingContents('s1')).toEqual(['a']);
      expect(spool.owedRecords()).toHaveLength(1);
      expect(logger.messages('warn').at(-1)).toBe(
        'Database write for session s1 failed (1 consecutive failure(s), 1 pending): refused as a whole',
      );
    });

    it('keeps what the disk alone holds, setting nothing aside', async () => {
      build({ cap: 0 });
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();
      build({ cap: 0, writer: refusingWriter() });

      expect(await flush('s1')).toBe('stopped');

      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      expect(spool.setAsideRecords).toEqual([]);
      expect(store.rows).toEqual([]);
    });
  });

  describe('pruning before a write-back', () => {
    let pruner: FakePruner;

    beforeEach(() => {
      pruner = new FakePruner(spool, store);
    });

    const writeBack = (sessionId: string) =>
      backlog.withSession(sessionId, (backlog) => sut.writeBack(backlog));

    it('asks the pruner first, before the journal is drained or anything is written back', async () => {
      build({ cap: 1 });
      store.goDown();
      await acceptEach(records('s1', 'a', 'b'));
      store.heal();
      build({ cap: 1, pruner });

      expect(await flush('s1')).toBe('done');

      expect(pruner.asked).toEqual([
        { sessionId: 's1', held: 1, journalOnly: true, writes: 2, drains: 0 },
      ]);
      expect(store.contents()).toEqual(['a', 'b']);
    });

    it('writes nothing back, and keeps everything, when the pruner cannot tell', async () => {
      build({ cap: 1 });
      store.goDown();
      await acceptEach(records('s1', 'a', 'b'));
      store.heal();
      pruner.answer = false;
      build({ cap: 1, pruner });

      expect(await flush('s1')).toBe('stopped');

      expect(store.writeCalls).toHaveLength(2);
      expect(spool.batchCalls).toEqual([]);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      expect(await pendingContents('s1')).toEqual(['b']);
      expect(spool.owedRecords('s1').map((record) => record.content)).toEqual(['a', 'b']);
      expect(storedEvents).toEqual([]);
    });

    it('reports a write-back the pruner cannot tell about as not done', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();
      pruner.answer = false;
      build({ pruner });

      expect(await writeBack('s1')).toBe('stopped');

      expect(store.writeCalls).toHaveLength(1);
      expect(await pendingContents('s1')).toEqual(['a']);
    });

    it('journals a fresh append behind a backlog the pruner cannot tell about, without trying the database', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();
      pruner.answer = false;
      build({ pruner });

      expect(await acceptEach(records('s1', 'b'))).toEqual([AppendStatus.QUEUED]);

      expect(store.writeCalls).toHaveLength(1);
      expect(await pendingContents('s1')).toEqual(['a', 'b']);
    });

    it('writes back only what the pruner left, from memory and from the journal', async () => {
      build({ cap: 2 });
      store.goDown();
      const [a, b, c] = records('s1', 'a', 'b', 'c');
      await acceptEach([a, b, c]);
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      store.heal();
      pruner.dropHeld = 1;
      pruner.forgetUpTo = a.acceptedAt;
      build({ cap: 2, pruner });

      expect(await flush('s1')).toBe('done');

      expect(store.contents()).toEqual(['c']);
      // a and b were tried (and failed) while the database was down; c alone now.
      expect(store.writeCalls.slice(3)).toEqual([[c.id]]);
      expect(spool.batchCalls).toEqual([]);
      expect(spool.owedRecords()).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(storedEvents).toEqual([new MessagesStored('s1', [c], 1)]);
      expect(pruner.asked).toEqual([
        { sessionId: 's1', held: 2, journalOnly: true, writes: 3, drains: 0 },
      ]);
    });

    it('stores a fresh append at once behind a backlog the pruner dropped whole', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      store.heal();
      pruner.dropHeld = 1;
      build({ pruner });

      expect(await acceptEach(records('s1', 'b'))).toEqual([AppendStatus.PERSISTED]);

      expect(store.contents()).toEqual(['b']);
      expect(spool.owedRecords()).toEqual([]);
      expect(pruner.asked).toHaveLength(1);
    });

    it('is not asked when the session holds nothing', async () => {
      build({ pruner });

      expect(await flush('idle')).toBe('done');
      expect(await acceptEach(records('s1', 'a'))).toEqual([AppendStatus.PERSISTED]);

      expect(pruner.asked).toEqual([]);
    });
  });

  describe('journalBuffered', () => {
    const journalBuffered = (sessionId: string) =>
      backlog.withSession(sessionId, (backlog) => sut.journalBuffered(backlog));

    it('has nothing to do when nothing is held in memory only', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));
      const appends = spool.appendCalls;

      expect(await journalBuffered('s1')).toBe('done');
      expect(await journalBuffered('empty')).toBe('done');

      expect(spool.appendCalls).toBe(appends);
    });

    it('journals what memory alone holds once the disk takes it, keeping its place', async () => {
      store.goDown();
      spool.failDisk();
      const batch = records('s1', 'a', 'b');
      await acceptEach(batch);
      spool.healDisk();

      expect(await journalBuffered('s1')).toBe('done');

      expect(spool.owedRecords()).toEqual(batch);
      expect(backlog.totalBuffered).toBe(0);
      expect(await pendingContents('s1')).toEqual(['a', 'b']);
      expect((await pending('s1')).every((entry) => entry.location !== null)).toBe(true);
    });

    it('says so when the disk still fails', async () => {
      store.goDown();
      spool.failDisk();
      await acceptEach(records('s1', 'a'));

      expect(await journalBuffered('s1')).toBe('stopped');

      expect(backlog.totalBuffered).toBe(1);
    });
  });

  describe('hasBacklog', () => {
    const hasBacklog = (sessionId: string) =>
      backlog.withSession(sessionId, async (backlog) => sut.hasBacklog(backlog));

    it('is false for a session that owes nothing', async () => {
      expect(await hasBacklog('s1')).toBe(false);
    });

    it('is true for messages in memory', async () => {
      store.goDown();
      await acceptEach(records('s1', 'a'));

      expect(await hasBacklog('s1')).toBe(true);
    });

    it('is true for messages on disk only', async () => {
      build({ cap: 0 });
      store.goDown();
      await acceptEach(records('s1', 'a'));
      expect(backlog.size('s1')).toBe(0);

      expect(await hasBacklog('s1')).toBe(true);
    });
  });
});
