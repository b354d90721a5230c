import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { type Counter } from 'prom-client';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { Failpoints } from '../common/failpoints.js';
import { AppendIntake } from '../common/lifecycle/append-intake.js';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { type StoredTimes } from '../database/stored-times.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { messageIdFor } from '../message/message-id.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { formatOrderKey, keysAfter, parseOrderKey } from '../message/order-key.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AppendStatus } from '../message/append-status.js';
import { type CoalescingWriter } from './coalescing-writer.js';
import { DatabaseHealth } from '../database/database-health.js';
import { HeldMoves } from './held-moves.js';
import { JournalReplay } from './journal-replay.js';
import { WriteReports } from './write-reports.js';
import { DurableWriter } from './durable-writer.js';
import { TranscriptRecovery } from './recovery.js';
import { RetryLookup } from './retry-lookup.js';
import { type DatabaseReadiness } from '../database/database-readiness.js';
import { SessionBacklog } from './session-backlog.js';
import { FakeMessageStore, writerOver } from './testing/fake-message-store.js';
import { FakeSessionQueries, storedElsewhereOver } from './testing/fake-session-queries.js';
import { FakeSpool } from './testing/fake-spool.js';
import { PartlyImported, TranscriptImporter, type ImportedMessage } from './transcript-importer.js';
import { TranscriptBoot } from './transcript-boot.js';
import { TranscriptService } from './transcript.service.js';
import { type MessageInput } from './dto/message.input.js';
import { toMessageModel } from '../common/graphql/message.mapper.js';

const INSTANCE = 'inst0001';
// The database is connected and migrated from the start here (see database-startup.spec.ts).
const readiness = { isReady: true, ready: Promise.resolve() } as DatabaseReadiness;
const SPOOL_DIR = '/fake/pending_messages';

function message(content: string, clientMessageId?: string): NewMessage {
  return { role: MessageRole.USER, content, ...(clientMessageId ? { clientMessageId } : {}) };
}

async function total(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  return (await counter.get()).values
    .filter((value) => Object.entries(labels).every(([key, label]) => value.labels[key] === label))
    .reduce((sum, value) => sum + value.value, 0);
}

/** The exception `promise` rejects with. */
async function rejectionOf(promise: Promise<unknown>): Promise<ScribeException> {
  try {
    await promise;
  } catch (error) {
    return error as ScribeException;
  }
  throw new Error('expected a rejection');
}

/** Lets every promise chain under way run to its end (the fakes wait on no timer or I/O). */
const idle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(TranscriptService.name, () => {
  let store: FakeMessageStore;
  let writer: CoalescingWriter;
  let spool: FakeSpool;
  let queries: FakeSessionQueries;
  let logger: CapturingLogger;
  let metrics: MetricsService;
  let backlog: SessionBacklog;
  let health: DatabaseHealth;
  let recovery: TranscriptRecovery;
  let sut: TranscriptService;
  let boot: TranscriptBoot;
  let intake: AppendIntake;
  let clock: OrderKeyGenerator;
  // What the database's newest stored times answer (a number, or a failure).
  let storedLatest: () => Promise<number>;
  const storedTimes = { latest: () => storedLatest() } as unknown as StoredTimes;

  function build({
    cap = 3,
    backgroundRetry = false,
    retryIntervalMs = 0,
    databaseReadiness = readiness,
  } = {}): void {
    const config = ScribeConfig.fromVariables({
      MAX_MESSAGE_BYTES: '100',
      MAX_PENDING_PER_SESSION: String(cap),
      DB_RETRY_INTERVAL_MS: String(retryIntervalMs),
    });
    metrics = new MetricsService();
    backlog = new SessionBacklog();
    health = new DatabaseHealth({ isReady: true }, backgroundRetry, Date.now, logger);
    intake = new AppendIntake();
    const moves = new HeldMoves();
    const reports = new WriteReports(health, new EventEmitter2(), metrics);
    const durable = new DurableWriter(
      writer,
      spool.asService,
      spool.asIndex,
      spool.asJournal,
      health,
      reports,
      new JournalReplay(writer, spool.asJournal, moves, reports, storedElsewhereOver(store)),
      metrics,
      config.maxPendingPerSession,
      new Failpoints(),
      moves,
      storedElsewhereOver(store),
    );
    recovery = new TranscriptRecovery(
      backlog,
      durable,
      writer,
      spool.asService,
      spool.asIndex,
      health,
      metrics,
      config.dbRetryIntervalMs,
      config.dbIdleProbeMs,
    );
    clock = new OrderKeyGenerator(INSTANCE);
    const retries = new RetryLookup(
      spool.asService,
      spool.asIndex,
      spool.asJournal,
      queries.asQueries,
    );
    sut = new TranscriptService(
      backlog,
      durable,
      recovery,
      health,
      spool.asService,
      spool.asIndex,
      retries,
      config,
      metrics,
      clock,
      new TranscriptImporter(durable, retries, queries.asQueries, clock, metrics),
      intake,
    );
    boot = new TranscriptBoot(recovery, config, databaseReadiness, clock, storedTimes);
  }

  beforeEach(() => {
    store = new FakeMessageStore();
    writer = writerOver(store);
    spool = new FakeSpool();
    queries = new FakeSessionQueries(store);
    logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    storedLatest = async () => 0;
    build();
  });

  afterEach(() => {
    jest.useRealTimers();
    expect(spool.misuses).toEqual([]);
  });

  const append = (sessionId: string, ...inputs: NewMessage[]) =>
    sut.appendRecords(sessionId, inputs);

  /** How many copies of the message with this id the database holds. */
  const copiesOf = (id: string) => store.rows.filter((row) => row.id === id).length;

  describe('append', () => {
    it('stores fresh messages and answers PERSISTED, giving each its id and place', async () => {
      const result = await append(
        's1',
        { ...message('first', 'c-1'), toolName: 'search', toolCallId: 't-1', toolCalls: [1] },
        { ...message('second'), role: MessageRole.ASSISTANT, metadata: { a: 1 } },
      );

      expect(result.status).toBe(AppendStatus.PERSISTED);
      const [first, second] = result.records;
      expect(first).toEqual({
        id: messageIdFor('s1', 'c-1'),
        sessionId: 's1',
        orderKey: expect.stringMatching(new RegExp(`\\.${INSTANCE}$`)),
        role: MessageRole.USER,
        content: 'first',
        clientMessageId: 'c-1',
        toolName: 'search',
        toolCallId: 't-1',
        toolCalls: [1],
        metadata: null,
        acceptedAt: parseOrderKey(first.orderKey)?.ms,
      });
      expect(second).toMatchObject({
        role: MessageRole.ASSISTANT,
        clientMessageId: null,
        toolName: null,
        toolCallId: null,
        toolCalls: null,
        metadata: { a: 1 },
      });
      expect(second.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(second.orderKey > first.orderKey).toBe(true);
      expect(store.rows).toEqual(result.records);
      expect(await total(metrics.appendsTotal, { status: 'persisted' })).toBe(2);
      // One lookup, for the one client id: nothing else was asked of the database.
      expect(queries.lookups).toBe(1);
    });

    it('marks its fresh messages as answered by the write, so that they are stored after the stored ones', async () => {
      const marks: unknown[] = [];
      const write = store.write.bind(store);
      store.write = (writes) => {
        marks.push(...writes.map((one) => one.after));
        return write(writes);
      };

      await append('s1', message('first'), message('second'));

      expect(marks).toEqual(['stored']);
    });

    it('leaves its clock where it was when a write stored its messages after keys days ahead', async () => {
      const ahead = Date.now() + 2 * 86_400_000;
      // The keys the real stores derive (stored-order.ts) after another instance's, whose
      // clock is two days ahead: the records carry them once the write returns.
      const storedKeys = keysAfter(formatOrderKey(ahead, 4, 'c0ffee00'), 2, INSTANCE) as string[];
      const write = store.write.bind(store);
      store.write = async (writes) => {
        store.write = write;
        const results = await write(writes);
        results[0].inserted.forEach((record, index) => (record.orderKey = storedKeys[index]));
        return results;
      };

      const before = Date.now();
      const moved = (await append('s1', message('a'), message('b'))).records;
      const [next] = (await append('s2', message('next'))).records;

      expect(moved.map((record) => record.orderKey)).toEqual(storedKeys);
      // The next key is this clock's own, timed now: not after the derived ones.
      const parsed = parseOrderKey(next.orderKey);
      expect(parsed?.instanceId).toBe(INSTANCE);
      expect(parsed?.ms).toBeGreaterThanOrEqual(before);
      expect(parsed?.ms).toBeLessThanOrEqual(Date.now());
      expect(clock.latest).toBeLessThanOrEqual(Date.now());
      expect(next.acceptedAt).toBeLessThanOrEqual(Date.now());
    });

    it('answers QUEUED when the database fails, BUFFERED when the disk fails too, and counts each', async () => {
      store.goDown();
      expect((await append('s1', message('a'))).status).toBe(AppendStatus.QUEUED);
      spool.failDisk();
      expect((await append('s1', message('b'), message('c'))).status).toBe(AppendStatus.BUFFERED);

      expect(await total(metrics.appendsTotal, { status: 'queued' })).toBe(1);
      expect(await total(metrics.appendsTotal, { status: 'buffered' })).toBe(2);
      expect(await total(metrics.appendsTotal, { status: 'persisted' })).toBe(0);
      // Without client ids there is nothing to look up.
      expect(queries.lookups).toBe(0);
    });

    it('refuses input it cannot store faithfully before accepting anything, naming the field', async () => {
      const refusal = await rejectionOf(append('s1', message('fine'), message('nul \u0000')));

      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal.code).toBe(ScribeErrorCode.BadUserInput);
      expect(refusal.field).toBe('messages.1.content');
      expect(store.writeCalls).toEqual([]);
      expect(backlog.total).toBe(0);
    });

    it('names fields as the caller says', async () => {
      const refusal = await rejectionOf(
        sut.appendRecords('s1', [message('nul \u0000')], () => 'input'),
      );

      expect(refusal.field).toBe('input.content');
    });

    it('holds messages to the configured size', async () => {
      expect((await append('s1', message('x'.repeat(100)))).status).toBe(AppendStatus.PERSISTED);

      const refusal = await rejectionOf(append('s1', message('x'.repeat(101))));
      expect(refusal.message).toContain('the limit is 100 bytes');
    });

    it('answers MESSAGE_REFUSED when the database refuses the messages, and changes nothing', async () => {
      store.refusingIds.add(messageIdFor('s1', 'bad'));

      const refusal = await rejectionOf(append('s1', message('ok', 'good'), message('bad', 'bad')));

      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal.code).toBe(ScribeErrorCode.MessageRefused);
      expect(refusal.message).toBe(
        'The database refused the message(s), and nothing was stored: refused bad',
      );
      expect(store.rows).toEqual([]);
      expect(spool.appendCalls).toBe(0);
      expect(backlog.total).toBe(0);
      expect(health.isFailing).toBe(false);
      expect(await total(metrics.appendsTotal)).toBe(0);
      expect((await append('s1', message('ok', 'good'))).status).toBe(AppendStatus.PERSISTED);
    });
  });

  describe('retries (a clientMessageId accepted before)', () => {
    it('answers a stored message with its first answer, storing nothing', async () => {
      const first = await append('s1', message('a', 'c-1'));

      const retry = await append('s1', message('a', 'c-1'));

      expect(retry).toEqual(first);
      expect(store.writeCalls).toHaveLength(1);
      expect(copiesOf(first.records[0].id)).toBe(1);
      expect(await total(metrics.appendsTotal)).toBe(1);
    });

    it('leaves the disk alone when the retried message is not held in memory only', async () => {
      await append('s1', message('a', 'c-1'));
      store.goDown();
      spool.failDisk();
      await append('s1', message('b'));
      spool.healDisk();
      const appends = spool.appendCalls;

      const retry = await append('s1', message('a', 'c-1'));

      expect(retry.status).toBe(AppendStatus.PERSISTED);
      expect(spool.appendCalls).toBe(appends);
      expect(backlog.totalBuffered).toBe(1);
    });

    it('refuses a retry whose first acceptance is in a journal file that cannot be read now', async () => {
      const first = acceptedRecord('s1', 'journaled before', {
        id: messageIdFor('s1', 'c-1'),
        clientMessageId: 'c-1',
      });
      spool.leaveOrphans([first]);
      spool.blockedIds.add(first.id);
      const appends = spool.appendCalls;

      await expect(append('s1', message('journaled before', 'c-1'))).rejects.toMatchObject({
        code: ScribeErrorCode.JournalUnavailable,
        message: expect.stringMatching(/^clientMessageId c-1 was accepted before, .* retry later$/),
      });
      expect(store.writeCalls).toEqual([]);
      expect(spool.appendCalls).toBe(appends);
      expect(backlog.total).toBe(0);
    });

    it('refuses an append with a client id while a journal file nobody has read owes records', async () => {
      spool.owesUnread = true;

      await expect(append('s1', message('first', 'c-9'))).rejects.toMatchObject({
        code: ScribeErrorCode.JournalUnavailable,
        message: expect.stringMatching(/^clientMessageId c-9 may have been accepted before, /),
      });
      expect(store.writeCalls).toEqual([]);

      const plain = await append('s1', message('no client id'));
      expect(plain.status).toBe(AppendStatus.PERSISTED);
      spool.owesUnread = false;
      expect((await append('s1', message('first', 'c-9'))).status).toBe(AppendStatus.PERSISTED);
    });

    it('answers a stored retry even while a journal file nobody has read owes records', async () => {
      const first = await append('s1', message('a', 'c-1'));
      spool.owesUnread = true;

      expect(await append('s1', message('a', 'c-1'))).toEqual(first);
    });

    it('answers a message stored by an earlier run or another instance with what is stored', async () => {
      const storedBefore = acceptedRecord('s1', 'from before', {
        id: messageIdFor('s1', 'c-1'),
        clientMessageId: 'c-1',
      });
      store.storedElsewhere(storedBefore);

      const retry = await append('s1', message('from before', 'c-1'));

      expect(retry).toEqual({ records: [storedBefore], status: AppendStatus.PERSISTED });
      expect(store.writeCalls).toEqual([]);
    });

    it('refuses a client id sent again with other content, IDEMPOTENCY_CONFLICT, storing nothing of the batch', async () => {
      const storedBefore = acceptedRecord('s1', 'from before', {
        id: messageIdFor('s1', 'c-1'),
        clientMessageId: 'c-1',
      });
      store.storedElsewhere(storedBefore);

      const refusal: unknown = await sut
        .appendRecords('s1', [message('new one'), message('changed', 'c-1')])
        .catch((error: unknown) => error);

      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal).toMatchObject({
        code: ScribeErrorCode.IdempotencyConflict,
        field: 'messages.1.clientMessageId',
      });
      expect((refusal as Error).message).toMatch(/accepted before with another content/);
      expect(store.writeCalls).toEqual([]);
      expect(backlog.total).toBe(0);
    });

    it('refuses a conflicting retry of a message still held in memory, and keeps that message', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));

      const refusal: unknown = await append('s1', {
        ...message('a', 'c-1'),
        metadata: { other: true },
      }).catch((error: unknown) => error);

      expect(refusal).toMatchObject({ code: ScribeErrorCode.IdempotencyConflict });
      expect(spool.owedRecords()).toEqual(first.records);
      store.heal();
      await append('s1', message('b'));
      expect(store.contents()).toEqual(['a', 'b']);
    });

    it('answers a message held in memory and journaled with its first answer: QUEUED, stored once', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));

      const retry = await append('s1', message('a', 'c-1'));

      expect(first.status).toBe(AppendStatus.QUEUED);
      expect(retry).toEqual(first);
      expect(spool.owedRecords()).toEqual(first.records);
      // Found in memory: the database was not asked again.
      expect(queries.lookups).toBe(1);
      store.heal();
      await append('s1', message('b'));
      expect(store.contents()).toEqual(['a', 'b']);
    });

    it('journals a retried message held in memory only once the disk takes it: QUEUED now', async () => {
      store.goDown();
      spool.failDisk();
      const first = await append('s1', message('a', 'c-1'));
      spool.healDisk();

      const retry = await append('s1', message('a', 'c-1'));

      expect(first.status).toBe(AppendStatus.BUFFERED);
      expect(retry).toEqual({ records: first.records, status: AppendStatus.QUEUED });
      expect(spool.owedRecords()).toEqual(first.records);
      expect(backlog.totalBuffered).toBe(0);
    });

    it('answers a retried message whose segment vanished BUFFERED while the disk fails, QUEUED once journaled again', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));
      spool.vanishAll();
      spool.failDisk();
      const calls = spool.rejournalCalls;

      const retry = await append('s1', message('a', 'c-1'));

      expect(first.status).toBe(AppendStatus.QUEUED);
      expect(retry).toEqual({ records: first.records, status: AppendStatus.BUFFERED });
      expect(spool.rejournalCalls).toBe(calls + 1);
      spool.healDisk();
      const later = await append('s1', message('a', 'c-1'));
      expect(later).toEqual({ records: first.records, status: AppendStatus.QUEUED });
    });

    it('asks the journal nothing more for a retried message still on disk', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));
      const calls = spool.rejournalCalls;

      expect(await append('s1', message('a', 'c-1'))).toEqual(first);
      expect(spool.rejournalCalls).toBe(calls);
    });

    it('answers a retried message held in memory only BUFFERED while the disk still fails', async () => {
      store.goDown();
      spool.failDisk();
      const first = await append('s1', message('a', 'c-1'));

      const retry = await append('s1', message('a', 'c-1'));

      expect(retry).toEqual(first);
      expect(retry.status).toBe(AppendStatus.BUFFERED);
      expect(backlog.total).toBe(1);
    });

    it('answers a message on disk only with its first answer, journaling nothing again', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));
      for (const content of ['b', 'c', 'd']) await append('s1', message(content));
      expect(spool.journalOnlyContents('s1')).toEqual(['a']);
      const appends = spool.appendCalls;

      const retry = await append('s1', message('a', 'c-1'));

      expect(retry).toEqual(first);
      expect(spool.appendCalls).toBe(appends);
      store.heal();
      await append('s1', message('e'));
      expect(store.contents()).toEqual(['a', 'b', 'c', 'd', 'e']);
    });

    it('answers a stored message with its id during an outage that fails reads too, and stores it once', async () => {
      const first = await append('s1', message('a', 'c-1'));
      store.goDown();
      queries.readError = new Error('connection refused');

      const retry = await append('s1', message('a', 'c-1'));

      expect(retry.status).toBe(AppendStatus.QUEUED);
      expect(retry.records[0].id).toBe(first.records[0].id);
      store.heal();
      queries.readError = null;
      await append('s1', message('b'));
      expect(copiesOf(first.records[0].id)).toBe(1);
      expect(store.contents()).toEqual(['a', 'b']);
      expect(spool.owedRecords()).toEqual([]);
    });

    it('answers each message of a batch on its own: the retried one as first answered, the new one stored', async () => {
      store.goDown();
      const first = await append('s1', message('a', 'c-1'));
      store.heal();

      const result = await append('s1', message('a', 'c-1'), message('b', 'c-2'));

      expect(result.records[0]).toEqual(first.records[0]);
      expect(result.records[1]).toMatchObject({ content: 'b', clientMessageId: 'c-2' });
      expect(result.status).toBe(AppendStatus.QUEUED);
      expect(store.contents()).toEqual(['a', 'b']);
      expect(await total(metrics.appendsTotal, { status: 'persisted' })).toBe(1);
    });

    it('keeps retries of one session apart from another session', async () => {
      const first = await append('s1', message('a', 'c-1'));

      const other = await append('s2', message('a', 'c-1'));

      expect(other.records[0].id).not.toBe(first.records[0].id);
      expect(store.contents()).toEqual(['a', 'a']);
    });
  });

  describe('importRecords', () => {
    const CREATED = Date.UTC(2023, 4, 6, 7, 8, 9, 10);
    let next = 0;
    const imported = (fields: Partial<ImportedMessage> = {}): ImportedMessage => ({
      id: `0190a5b4-7c1e-7d2a-9b3c-${String(next++).padStart(12, '0')}`,
      role: MessageRole.USER,
      content: 'imported',
      createdAt: CREATED,
      ...fields,
    });
    const line = (index: number) => `line ${index + 2}.message`;
    const importAll = (sessionId: string, ...messages: ImportedMessage[]) =>
      sut.importRecords(sessionId, messages, line, 'lines');

    it('stores each with its id and time, in order, after what the session holds, PERSISTED', async () => {
      const [stored] = (await append('s1', message('appended first'))).records;
      const withClientId = imported({
        id: messageIdFor('s1', 'c-1'),
        clientMessageId: 'c-1',
        content: 'second',
        toolName: 'search',
        toolCallId: 't-1',
        toolCalls: [1],
        metadata: { a: 1 },
      });
      const plain = imported({ content: 'third', createdAt: 0 });

      const answers = await importAll('s1', withClientId, plain);

      expect(answers).toEqual([
        { status: AppendStatus.PERSISTED, accepted: true },
        { status: AppendStatus.PERSISTED, accepted: true },
      ]);
      expect(store.rows).toHaveLength(3);
      const [, second, third] = store.rows;
      expect(second).toEqual({
        id: withClientId.id,
        sessionId: 's1',
        orderKey: expect.stringMatching(new RegExp(`\\.${INSTANCE}$`)),
        role: MessageRole.USER,
        content: 'second',
        clientMessageId: 'c-1',
        toolName: 'search',
        toolCallId: 't-1',
        toolCalls: [1],
        metadata: { a: 1 },
        acceptedAt: parseOrderKey(second.orderKey)?.ms,
        createdAt: CREATED,
      });
      expect(third).toMatchObject({
        id: plain.id,
        clientMessageId: null,
        toolName: null,
        toolCallId: null,
        toolCalls: null,
        metadata: null,
        createdAt: 0,
      });
      expect(second.orderKey > stored.orderKey).toBe(true);
      expect(third.orderKey > second.orderKey).toBe(true);
      // The imported times move nothing: the clock stays at the wall's.
      expect(clock.latest).toBeLessThanOrEqual(Date.now());
      expect(second.acceptedAt).toBeGreaterThan(CREATED);
      expect(await total(metrics.appendsTotal, { status: 'persisted' })).toBe(3);
    });

    it('answers a second import of the same messages as existing, storing nothing', async () => {
      const messages = [
        imported(),
        imported({ id: messageIdFor('s1', 'c-1'), clientMessageId: 'c-1' }),
      ];
      await importAll('s1', ...messages);

      const again = await importAll('s1', ...messages);

      expect(again).toEqual([
        { status: AppendStatus.PERSISTED, accepted: false },
        { status: AppendStatus.PERSISTED, accepted: false },
      ]);
      expect(store.rows).toHaveLength(2);
      expect(await total(metrics.appendsTotal)).toBe(2);
    });

    it('answers messages it holds during an outage as QUEUED, and stores them once afterwards', async () => {
      store.goDown();
      const messages = [imported(), imported()];
      expect(await importAll('s1', ...messages)).toEqual([
        { status: AppendStatus.QUEUED, accepted: true },
        { status: AppendStatus.QUEUED, accepted: true },
      ]);
      expect(await importAll('s1', ...messages)).toEqual([
        { status: AppendStatus.QUEUED, accepted: false },
        { status: AppendStatus.QUEUED, accepted: false },
      ]);
      spool.failDisk();
      expect(await importAll('s1', imported())).toEqual([
        { status: AppendStatus.BUFFERED, accepted: true },
      ]);
      expect(await total(metrics.appendsTotal, { status: 'queued' })).toBe(2);
      expect(await total(metrics.appendsTotal, { status: 'buffered' })).toBe(1);
      spool.healDisk();
      store.heal();
      // The next write stores what the session holds first, then its own.
      const later = imported();
      expect(await importAll('s1', later)).toEqual([
        { status: AppendStatus.PERSISTED, accepted: true },
      ]);
      expect(await importAll('s1', messages[0])).toEqual([
        { status: AppendStatus.PERSISTED, accepted: false },
      ]);
      expect(store.rows.map((row) => row.id)).toEqual([
        ...messages.map((one) => one.id),
        expect.any(String),
        later.id,
      ]);
    });

    it.each<[string, () => ImportedMessage, string, string]>([
      [
        'an id that is no UUID',
        () => imported({ id: 'x' }),
        'line 3.message.id',
        'must be a UUID in lower case',
      ],
      [
        'an id with more before it',
        () => imported({ id: 'x0190a5b4-7c1e-7d2a-9b3c-000000000000' }),
        'line 3.message.id',
        'must be a UUID in lower case',
      ],
      [
        'an id with more after it',
        () => imported({ id: '0190a5b4-7c1e-7d2a-9b3c-000000000000x' }),
        'line 3.message.id',
        'must be a UUID in lower case',
      ],
      [
        'an id in upper case',
        () => imported({ id: '0190A5B4-7C1E-7D2A-9B3C-000000000000' }),
        'line 3.message.id',
        'must be a UUID in lower case',
      ],
      [
        'a v5 id without a client id',
        () => imported({ id: messageIdFor('s1', 'c-9') }),
        'line 3.message.id',
        'is a name-based UUID (version 5), which Scribe derives from client ids: a message without a clientMessageId needs another',
      ],
      [
        'an id not derived from its client id',
        () => imported({ clientMessageId: 'c-9' }),
        'line 3.message.id',
        'is not the id this session gives its clientMessageId (import into the session it was exported from)',
      ],
      [
        "another session's derived id",
        () => imported({ id: messageIdFor('s2', 'c-9'), clientMessageId: 'c-9' }),
        'line 3.message.id',
        'is not the id this session gives its clientMessageId (import into the session it was exported from)',
      ],
    ])('refuses %s before storing anything of the batch', async (_case, make, field, reason) => {
      const refusal = await rejectionOf(importAll('s1', imported(), make()));

      expect(refusal.code).toBe(ScribeErrorCode.BadUserInput);
      expect(refusal.field).toBe(field);
      expect(refusal.message).toBe(`${field}: ${reason}`);
      expect(store.rows).toEqual([]);
    });

    it('takes a v4 or v7 id, and a derived one with its client id', async () => {
      await importAll(
        's1',
        imported({ id: '2b9d2f5e-3c4a-4b6d-8e7f-901a2b3c4d5e' }),
        imported({ id: '0190a5b4-7c1e-7d2a-9b3c-4d5e6f708192' }),
        imported({ id: messageIdFor('s1', 'c-1'), clientMessageId: 'c-1' }),
      );
      expect(store.rows).toHaveLength(3);
    });

    it('refuses an id repeated in a batch', async () => {
      const once = imported();
      const refusal = await rejectionOf(importAll('s1', once, imported(), { ...once }));

      expect(refusal.field).toBe('line 4.message.id');
      expect(refusal.message).toBe('line 4.message.id: repeats the id of line 2.message');
      expect(store.rows).toEqual([]);
    });

    it.each<[string, Partial<ImportedMessage>, string]>([
      ['content', { content: 'other' }, 'content'],
      ['role', { role: MessageRole.ASSISTANT }, 'role'],
      ['time', { createdAt: CREATED + 1 }, 'createdAt'],
      ['metadata', { metadata: { b: 2 } }, 'metadata'],
    ])(
      'refuses an id stored with another %s: IDEMPOTENCY_CONFLICT, nothing of the batch stored',
      async (_case, change, field) => {
        const first = imported();
        await importAll('s1', first);

        const refusal = await rejectionOf(importAll('s1', imported(), { ...first, ...change }));

        expect(refusal.code).toBe(ScribeErrorCode.IdempotencyConflict);
        expect(refusal.field).toBe('line 3.message');
        expect(refusal.message).toBe(
          `line 3.message: its id was stored or held before with another ${field}; nothing of this batch was imported`,
        );
        expect(store.rows).toHaveLength(1);
      },
    );

    it('refuses a line with a later revision than the stored message, but takes an older one as existing', async () => {
      const first = imported({ content: 'as stored' });
      await importAll('s1', first);
      const later = { ...first, content: 'edited', revision: 2, editedAt: CREATED + 5 };

      const refusal = await rejectionOf(importAll('s1', later));

      expect(refusal.code).toBe(ScribeErrorCode.IdempotencyConflict);
      expect(refusal.message).toBe(
        'line 2.message: its id was stored or held before with another revision; nothing of this batch was imported',
      );
      // Stored at revision 3 (edited twice where it came from), imported again at 2 or at 3.
      const edited = imported({ content: 'v3', revision: 3, editedAt: CREATED + 9 });
      await importAll('s2', edited);
      const older = { ...edited, content: 'v2', revision: 2, editedAt: CREATED + 4 };
      expect(await importAll('s2', older)).toEqual([
        { status: AppendStatus.PERSISTED, accepted: false },
      ]);
      expect(await importAll('s2', edited)).toEqual([
        { status: AppendStatus.PERSISTED, accepted: false },
      ]);
      // The same revision with other content is another state of it: refused.
      const contradicting = await rejectionOf(importAll('s2', { ...edited, content: 'v3?' }));
      expect(contradicting.message).toMatch(/another content/);
      // An older state with another role is not this message at all.
      const otherRole = await rejectionOf(
        importAll('s2', { ...older, role: MessageRole.ASSISTANT }),
      );
      expect(otherRole.message).toMatch(/another role/);
      expect(store.rows.map((row) => [row.content, row.revision])).toEqual([
        ['as stored', undefined],
        ['v3', 3],
      ]);
    });

    it('refuses an id without a client id when it was stored with one', async () => {
      const withClientId = imported({ id: messageIdFor('s1', 'c-1'), clientMessageId: 'c-1' });
      await importAll('s1', withClientId);
      // The same id sent as a plain message: refused for its v5 id, before any lookup.
      const refusal = await rejectionOf(
        importAll('s1', { ...withClientId, clientMessageId: null }),
      );
      expect(refusal.code).toBe(ScribeErrorCode.BadUserInput);
    });

    it("refuses an id that is another session's message", async () => {
      const theirs = imported();
      await importAll('s2', theirs);

      const refusal = await rejectionOf(importAll('s1', imported(), theirs));

      expect(refusal.code).toBe(ScribeErrorCode.IdempotencyConflict);
      expect(refusal.message).toBe(
        "line 3.message: its id is another session's message; nothing of this batch was imported",
      );
      expect(store.rows.map((row) => row.sessionId)).toEqual(['s2']);
    });

    it('answers as existing a message another import stored between its lookup and its write', async () => {
      const raced = imported();
      queries.afterNextLookup(() =>
        store.storedElsewhere(
          acceptedRecord('s1', 'imported', { id: raced.id, createdAt: CREATED }),
        ),
      );

      const answers = await importAll('s1', raced, imported());

      expect(answers).toEqual([
        { status: AppendStatus.PERSISTED, accepted: false },
        { status: AppendStatus.PERSISTED, accepted: true },
      ]);
      expect(await total(metrics.appendsTotal)).toBe(1);
    });

    it("says so when its id was stored meanwhile as another session's message", async () => {
      const before = imported();
      const raced = imported();
      queries.afterNextLookup(() =>
        store.storedElsewhere(acceptedRecord('s2', 'theirs', { id: raced.id })),
      );

      const refusal = await rejectionOf(importAll('s1', before, raced, imported()));

      expect(refusal).toBeInstanceOf(PartlyImported);
      expect(refusal.code).toBe(ScribeErrorCode.IdempotencyConflict);
      expect(refusal.field).toBe('line 3.message');
      expect(refusal.message).toBe(
        "line 3.message: its id was stored meanwhile as another session's message; 2 other message(s) of its batch were stored now, counted in imported",
      );
      // The line after the refused one was stored too, and is answered with the one before it.
      expect((refusal as PartlyImported).stored).toEqual([
        { status: AppendStatus.PERSISTED, accepted: true },
        { status: AppendStatus.PERSISTED, accepted: true },
      ]);
      expect(store.rows.map((row) => row.sessionId)).toEqual(['s2', 's1', 's1']);
    });

    it("counts none stored when every id was stored meanwhile as another session's", async () => {
      const raced = imported();
      queries.afterNextLookup(() =>
        store.storedElsewhere(acceptedRecord('s2', 'theirs', { id: raced.id })),
      );

      const refusal = await rejectionOf(importAll('s1', raced));

      expect(refusal.message).toBe(
        "line 2.message: its id was stored meanwhile as another session's message; 0 other message(s) of its batch were stored now, counted in imported",
      );
      expect((refusal as PartlyImported).stored).toEqual([]);
      expect(store.rows.map((row) => row.sessionId)).toEqual(['s2']);
    });

    it('checks the input as an append does, naming the line', async () => {
      const refusal = await rejectionOf(
        importAll('s1', imported(), imported({ content: 'nul \u0000' })),
      );
      expect(refusal.field).toBe('line 3.message.content');
      expect(store.rows).toEqual([]);
    });

    it('refuses imports once shutdown has begun', async () => {
      await sut.beforeApplicationShutdown();
      const refusal = await rejectionOf(importAll('s1', imported()));
      expect(refusal.code).toBe(ScribeErrorCode.ServiceUnavailable);
      expect(store.rows).toEqual([]);
    });
  });

  describe('a client id another instance stored first', () => {
    let storedFirst: MessageRecord;

    beforeEach(() => {
      storedFirst = acceptedRecord('s1', 'stored by the other instance', {
        id: messageIdFor('s1', 'c-1'),
        clientMessageId: 'c-1',
      });
      // Stored between this instance's lookup and its write.
      queries.afterNextLookup(() => store.storedElsewhere(storedFirst));
    });

    it('is answered with the stored message, and is no outage', async () => {
      const result = await append('s1', message('mine', 'c-1'));

      expect(result).toEqual({ records: [storedFirst], status: AppendStatus.PERSISTED });
      expect(store.rows).toEqual([storedFirst]);
      expect(health.isFailing).toBe(false);
      expect(await total(metrics.dbWriteFailures)).toBe(0);
      expect(spool.appendCalls).toBe(0);
      expect(await total(metrics.appendsTotal)).toBe(0);
    });

    it('stores the other messages of the batch once', async () => {
      const result = await append('s1', message('mine', 'c-1'), message('plain'));

      expect(result.records[0]).toEqual(storedFirst);
      expect(result.records[1]).toMatchObject({ content: 'plain' });
      expect(result.status).toBe(AppendStatus.PERSISTED);
      expect(store.contents()).toEqual(['stored by the other instance', 'plain']);
      expect(store.rows[1]).toEqual(result.records[1]);
      expect(await total(metrics.appendsTotal, { status: 'persisted' })).toBe(1);
    });

    it('asks the database only about the messages stored first by another acceptance', async () => {
      await append('s1', message('mine', 'c-1'), message('other', 'c-2'));

      expect(queries.lookedUp).toEqual([['c-1', 'c-2'], ['c-1']]);
    });

    it('answers each message stored first with its own stored copy', async () => {
      const alsoStoredFirst = acceptedRecord('s1', 'also stored by the other instance', {
        id: messageIdFor('s1', 'c-2'),
        clientMessageId: 'c-2',
      });
      queries.afterNextLookup(() => {
        store.storedElsewhere(storedFirst);
        store.storedElsewhere(alsoStoredFirst);
      });

      const result = await append('s1', message('mine', 'c-1'), message('mine too', 'c-2'));

      expect(result.records).toEqual([storedFirst, alsoStoredFirst]);
    });

    it('is answered with its own id when the stored message cannot be read', async () => {
      queries.readError = new Error('read timeout');

      const result = await append('s1', message('mine', 'c-1'));

      expect(result.status).toBe(AppendStatus.PERSISTED);
      expect(result.records[0].id).toBe(storedFirst.id);
      expect(store.rows).toEqual([storedFirst]);
    });
  });

  describe('shutdown', () => {
    it('refuses appends from then on', async () => {
      await sut.beforeApplicationShutdown();

      const refusal = await rejectionOf(append('s1', message('late')));

      expect(sut.isAccepting).toBe(false);
      // What /health and /health/ready read: the write path closed the one intake.
      expect(intake.isAccepting).toBe(false);
      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal.code).toBe(ScribeErrorCode.ServiceUnavailable);
      expect(refusal.message).toBe(
        'This instance is shutting down and did not accept the append; retry it.',
      );
      expect(store.writeCalls).toEqual([]);
    });

    it('waits for an import under way, and refuses imports from then on', async () => {
      const importOne = (content: string, n: number) =>
        sut.importRecords(
          's1',
          [
            {
              id: `0190a5b4-7c1e-7d2a-9b3c-00000000090${n}`,
              role: MessageRole.USER,
              content,
              createdAt: 1000,
            },
          ],
          (index) => `line ${index}`,
          'lines',
        );
      await importOne('over', 3);
      const held = store.holdNextCall();
      const underWay = importOne('under way', 1);
      await store.callsReceived(1);
      let closed = false;
      const closing = sut.beforeApplicationShutdown().then(() => (closed = true));
      await idle();
      expect(closed).toBe(false);

      const refusal = await rejectionOf(importOne('late', 2));
      expect(refusal.code).toBe(ScribeErrorCode.ServiceUnavailable);
      expect(refusal.message).toBe(
        'This instance is shutting down and did not accept the import; retry it.',
      );
      held.resolve();
      await underWay;
      await closing;
      expect(logger.messages('log')[0]).toBe('Shutting down: waited for 1 in-flight append(s)');
    });

    it('accepts appends until then', () => {
      expect(sut.isAccepting).toBe(true);
      expect(intake.isAccepting).toBe(true);
    });

    it('waits for the appends under way, then shuts the recovery down', async () => {
      const held = store.holdNextCall();
      const underWay = append('s1', message('under way'));
      await store.callsReceived(1);
      let closed = false;

      const closing = sut.beforeApplicationShutdown().then(() => (closed = true));
      await idle();
      expect(closed).toBe(false);
      expect((await rejectionOf(append('s2', message('late')))).code).toBe(
        ScribeErrorCode.ServiceUnavailable,
      );

      held.resolve();
      expect((await underWay).status).toBe(AppendStatus.PERSISTED);
      await closing;
      expect(logger.messages('log')).toEqual([
        'Shutting down: waited for 1 in-flight append(s)',
        `Shutdown: 0 pending message(s) left in the journal at ${SPOOL_DIR}`,
      ]);
    });

    it('does not wait for appends that are over, answered or failed', async () => {
      await append('s1', message('done'));
      store.refusingIds.add(messageIdFor('s1', 'bad'));
      await rejectionOf(append('s1', message('bad', 'bad')));

      await sut.beforeApplicationShutdown();

      expect(logger.messages('log')[0]).toBe('Shutting down: waited for 0 in-flight append(s)');
    });

    it('journals what memory alone holds', async () => {
      store.goDown();
      spool.failDisk();
      const first = await append('s1', message('a'));
      spool.healDisk();

      await sut.beforeApplicationShutdown();

      expect(spool.owedRecords()).toEqual(first.records);
    });
  });

  describe('boot', () => {
    it('issues order keys after every key an earlier run accepted, even with the clock behind', async () => {
      const later = Date.now() + 3_600_000;
      const replayed = acceptedRecord('s1', 'from the last run', {
        orderKey: formatOrderKey(later, 999_999, 'gone0001'),
        acceptedAt: later,
      });
      spool.leaveOrphans([replayed]);

      await boot.onApplicationBootstrap();
      const [next] = (await append('s1', message('new'))).records;

      expect(next.orderKey > replayed.orderKey).toBe(true);
      expect(next.acceptedAt).toBeGreaterThan(later);
      expect(store.contents()).toEqual(['from the last run', 'new']);
    });

    it('writes back what was journaled as soon as a database down at start is up, without waiting for a retry', async () => {
      let up: () => void = () => undefined;
      const late = {
        isReady: false,
        ready: new Promise<void>((resolve) => (up = resolve)),
      } as DatabaseReadiness;
      build({ databaseReadiness: late });
      spool.leaveOrphans([acceptedRecord('s1', 'journaled before')]);
      store.goDown();

      await boot.onApplicationBootstrap();
      expect(store.contents()).toEqual([]);
      store.heal();
      up();

      // The write-back runs on its own: a few turns of the event loop, no timer.
      for (let turn = 0; turn < 50 && store.contents().length === 0; turn += 1) await idle();
      expect(store.contents()).toEqual(['journaled before']);
    });

    it('issues order keys after the newest stored time, even with the clock behind it', async () => {
      const stored = Date.now() + 30 * 86_400_000;
      storedLatest = async () => stored;

      await boot.onApplicationBootstrap();
      const [next] = (await append('s1', message('new'))).records;

      expect(next.acceptedAt).toBe(stored + 1);
      expect(next.orderKey).toBe(formatOrderKey(stored + 1, 0, INSTANCE));
      expect(logger.messages('warn')).toEqual([
        expect.stringMatching(/^The database holds times \d+ ms ahead of this clock/),
      ]);
    });

    it('says nothing of stored times within the tolerance ahead', async () => {
      const stored = Date.now() + 60_000;
      storedLatest = async () => stored;

      await boot.onApplicationBootstrap();

      expect((await append('s1', message('new'))).records[0].acceptedAt).toBe(stored + 1);
      expect(logger.messages('warn')).toEqual([]);
    });

    it('starts all the same when the stored times cannot be read, following the journal', async () => {
      const later = Date.now() + 3_600_000;
      spool.leaveOrphans([
        acceptedRecord('s1', 'from the last run', {
          orderKey: formatOrderKey(later, 0, 'gone0001'),
          acceptedAt: later,
        }),
      ]);
      storedLatest = async () => {
        throw new Error('SQLITE_BUSY: database is locked');
      };

      await boot.onApplicationBootstrap();

      expect((await append('s1', message('new'))).records[0].acceptedAt).toBe(later + 1);
      expect(logger.messages('warn')).toEqual([
        'Could not read the newest stored times at start (SQLITE_BUSY: database is locked); order keys follow the journal and the wall clock',
      ]);
    });

    it('starts the background retry', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
      build({ retryIntervalMs: 1000 });

      await boot.onApplicationBootstrap();

      expect(jest.getTimerCount()).toBe(1);
      await sut.beforeApplicationShutdown();
      expect(jest.getTimerCount()).toBe(0);
    });
  });

  describe('pendingStatus', () => {
    it('reports a healthy, empty write path', () => {
      expect(sut.pendingStatus()).toEqual({
        databaseWritable: true,
        lastDatabaseError: null,
        lastDatabaseErrorAt: null,
        totalPending: 0,
        sessions: [],
      });
    });

    it('reports every session with something pending, on disk or failing, sorted by id', async () => {
      build({ cap: 1 });
      store.goDown();
      // A gone instance's journal, taken over but not written back yet.
      spool.leaveOrphans([acceptedRecord('c-orphaned', 'from the last run')]);
      await spool.adoptOrphans();
      await append('b-memory', message('b1'));
      await append('a-both', message('a1'), message('a2'));
      health.failed('d-failed', new Error('connection refused'), 0);

      expect(sut.pendingStatus()).toEqual({
        databaseWritable: false,
        lastDatabaseError: 'connection refused',
        lastDatabaseErrorAt: expect.any(Date),
        totalPending: 2,
        sessions: [
          { sessionId: 'a-both', pending: 1, consecutiveFailures: 1, hasSpooledMessages: true },
          { sessionId: 'b-memory', pending: 1, consecutiveFailures: 1, hasSpooledMessages: false },
          {
            sessionId: 'c-orphaned',
            pending: 0,
            consecutiveFailures: 0,
            hasSpooledMessages: true,
          },
          { sessionId: 'd-failed', pending: 0, consecutiveFailures: 1, hasSpooledMessages: false },
        ],
      });
    });

    it('feeds the database-up and appends-in-flight gauges', async () => {
      expect(await metrics.render()).toMatch(/^scribe_database_up 1$/m);
      const held = store.holdNextCall();
      const underWay = append('s1', message('under way'));
      await store.callsReceived(1);
      expect(await metrics.render()).toMatch(/^scribe_appends_in_flight 1$/m);

      held.resolve();
      await underWay;
      expect(await metrics.render()).toMatch(/^scribe_appends_in_flight 0$/m);
      store.goDown();
      await append('s1', message('down'));
      expect(await metrics.render()).toMatch(/^scribe_database_up 0$/m);
    });

    it('times each append by its answer, a failed one as failed', async () => {
      await append('s1', message('stored'));
      store.refusingIds.add(messageIdFor('s1', 'bad'));
      await rejectionOf(append('s1', message('bad', 'bad')));

      const text = await metrics.render();
      expect(text).toMatch(/^scribe_append_duration_seconds_count\{status="persisted"\} 1$/m);
      expect(text).toMatch(/^scribe_append_duration_seconds_count\{status="failed"\} 1$/m);
    });

    it('feeds the pending-messages gauge', async () => {
      store.goDown();
      await append('s1', message('a'), message('b'));

      expect(await metrics.render()).toMatch(/^scribe_pending_messages 2$/m);
    });
  });

  describe('append, for a host', () => {
    const hostAppend = (sessionId: unknown, messages: unknown) =>
      sut.append(sessionId as string, messages as MessageInput[]);

    it('answers as appendMessages does: the messages as the API shows them, and the status', async () => {
      const answer = await sut.append('s1', [
        { ...message('first', 'c-1'), metadata: { a: 1 } },
        message('second'),
      ]);

      expect(answer.status).toBe(AppendStatus.PERSISTED);
      expect(answer.messages).toEqual(
        store.rows.map((row) => toMessageModel(row, AppendStatus.PERSISTED)),
      );
      expect(answer.messages[0]).toMatchObject({
        id: messageIdFor('s1', 'c-1'),
        content: 'first',
        metadata: { a: 1 },
        createdAt: expect.any(Date),
      });
    });

    it('maps the write path status: QUEUED while the database fails, BUFFERED when the disk fails too', async () => {
      store.goDown();
      const queued = await sut.append('s1', [message('a')]);
      expect(queued.status).toBe(AppendStatus.QUEUED);
      expect(queued.messages.map((one) => one.status)).toEqual([AppendStatus.QUEUED]);
      spool.failDisk();
      const buffered = await sut.append('s1', [message('b'), message('c')]);
      expect(buffered.status).toBe(AppendStatus.BUFFERED);
      expect(buffered.messages.map((one) => one.status)).toEqual([
        AppendStatus.BUFFERED,
        AppendStatus.BUFFERED,
      ]);
    });

    it.each([
      ['a session id that is no string', 7, [message('a')], 'input.sessionId: must be a string'],
      ['a bad session id', 'no spaces', [message('a')], 'input.sessionId: must be'],
      ['messages that are no list', 's1', {}, 'input.messages: must be a list'],
      ['an empty batch', 's1', [], 'input.messages: must hold 1 to 1000 messages; it holds 0'],
      ['a message that is no object', 's1', ['hello'], 'input.messages.0: must be an object'],
      [
        'an unknown role',
        's1',
        [message('a'), { role: 'ROBOT', content: 'b' }],
        'input.messages.1.role: must be one of the following values',
      ],
      ['content that is no string', 's1', [{ role: MessageRole.USER }], 'input.messages.0.content'],
      [
        'a client id that is no string',
        's1',
        [{ ...message('a'), clientMessageId: 5 }],
        'input.messages.0.clientMessageId',
      ],
      [
        'an unknown field',
        's1',
        [{ ...message('a'), sessionId: 's1' }],
        'input.messages.0.sessionId: property sessionId should not exist',
      ],
      ['a NUL in the content', 's1', [message('nul \u0000')], 'input.messages.0.content'],
      [
        'a repeated client id',
        's1',
        [message('a', 'c'), message('b', 'c')],
        'input.messages.1.clientMessageId: repeats the clientMessageId of input.messages.0',
      ],
    ])('refuses %s with BAD_USER_INPUT, storing nothing', async (_name, id, messages, said) => {
      const refusal = await rejectionOf(hostAppend(id, messages));

      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal.code).toBe(ScribeErrorCode.BadUserInput);
      expect(refusal.message).toContain(said);
      expect(store.rows).toEqual([]);
    });

    it('refuses what appendMessages refuses, with the same error', async () => {
      const messages = [message('x'.repeat(101))];
      const overApi = await rejectionOf(
        sut.appendRecords('s1', messages, (index) => `input.messages.${index}`),
      );

      expect(await rejectionOf(sut.append('s1', messages))).toEqual(overApi);
      expect(overApi.code).toBe(ScribeErrorCode.BadUserInput);
    });
  });
});
