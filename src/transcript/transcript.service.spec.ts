import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  SPOOL_REASON_CAP_DROP,
  SPOOL_REASON_SHUTDOWN,
  SpoolDirectory,
} from '../spool/spool-directory.js';
import { SpoolService } from '../spool/spool.service.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';
import { AppendStatus } from './append-status.js';
import { MessageRole } from '../message/message-role.js';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { MessagesStored, WriteFailed } from '../message/message-events.js';
import { TranscriptService, type PendingSessionStatus } from './transcript.service.js';
import { MessageStore, type SessionWrite, type WriteResult } from '../database/message-store.js';
import { deferred } from '../common/testing/deferred.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';

// ---------------------------------------------------------------------------------------------
// Fakes and helpers
// ---------------------------------------------------------------------------------------------

/** Holds one call of the fake until the test opens it; `entered` resolves when the call arrives. */
class Gate {
  private readonly arrived = deferred();
  private readonly released = deferred();
  readonly entered = this.arrived.promise;

  async pass(): Promise<void> {
    this.arrived.resolve();
    await this.released.promise;
  }

  open(): void {
    this.released.resolve();
  }
}

/**
 * A database that fails every write while `broken`, then stores rows like the real store:
 * one transaction per call, all or nothing, `skipExisting` skipping records whose id or
 * (sessionId, clientMessageId) is stored already, a duplicate otherwise a constraint error.
 */
class BrokenThenHealedStore extends MessageStore {
  broken = true;
  /** Records that still fail (with their whole transaction) while the store is not broken. */
  failing: (record: MessageRecord) => boolean = () => false;
  readonly rows: MessageRecord[] = [];
  /** The argument of every write() call, failed ones included. */
  readonly writeCalls: SessionWrite[][] = [];
  private readonly writeHolds: { matches: (record: MessageRecord) => boolean; gate: Gate }[] = [];
  private readonly lookupHolds = new Map<string, Gate>();
  private readonly rowWaiters: { count: number; reached: () => void }[] = [];

  async write(writes: SessionWrite[]): Promise<WriteResult[]> {
    this.writeCalls.push(writes);
    const records = writes.flatMap((write) => write.records);
    const hold = this.writeHolds.findIndex(({ matches }) => records.some(matches));
    if (hold >= 0) await this.writeHolds.splice(hold, 1)[0].gate.pass();
    if (this.broken) throw new Error('db unavailable');
    const poisoned = records.find((record) => this.failing(record));
    if (poisoned) throw new Error(`still broken for ${poisoned.content}`);
    const accepted: MessageRecord[] = [];
    const perWrite: MessageRecord[][] = [];
    for (const write of writes) {
      const stored: MessageRecord[] = [];
      for (const record of write.records) {
        if (this.isStored(record, accepted)) {
          if (write.skipExisting) continue;
          throw Object.assign(new Error(`duplicate message ${record.id}`), {
            code: 'SQLITE_CONSTRAINT',
          });
        }
        accepted.push(record);
        stored.push(record);
      }
      perWrite.push(stored);
    }
    this.rows.push(...accepted);
    for (const waiter of this.rowWaiters) if (this.rows.length >= waiter.count) waiter.reached();
    return writes.map((write, index) => ({
      stored: perWrite[index],
      revision:
        perWrite[index].length > 0
          ? this.rows.filter((row) => row.sessionId === write.sessionId).length
          : null,
    }));
  }

  async probeWrite(): Promise<void> {
    await Promise.resolve();
    if (this.broken) throw new Error('db unavailable');
  }

  async findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]> {
    const gate = this.lookupHolds.get(sessionId);
    if (gate) {
      this.lookupHolds.delete(sessionId);
      await gate.pass();
    }
    if (this.broken) throw new Error('db unavailable');
    return this.rows.filter(
      (row) =>
        row.sessionId === sessionId &&
        row.clientMessageId !== null &&
        clientMessageIds.includes(row.clientMessageId),
    );
  }

  /** The next write() whose records include a match waits for the gate to open. */
  holdWrites(matches: (record: MessageRecord) => boolean): Gate {
    const gate = new Gate();
    this.writeHolds.push({ matches, gate });
    return gate;
  }

  /** The next lookup of the session's retries waits for the gate to open. */
  holdLookups(sessionId: string): Gate {
    const gate = new Gate();
    this.lookupHolds.set(sessionId, gate);
    return gate;
  }

  /** Resolves once at least `count` rows are stored. */
  rowsReached(count: number): Promise<void> {
    const { promise, resolve } = deferred();
    if (this.rows.length >= count) resolve();
    else this.rowWaiters.push({ count, reached: resolve });
    return promise;
  }

  /** Stored contents in storage order, optionally of one session. */
  contents(sessionId?: string): string[] {
    return this.rows
      .filter((row) => sessionId === undefined || row.sessionId === sessionId)
      .map((row) => row.content);
  }

  private isStored(record: MessageRecord, alsoIn: MessageRecord[]): boolean {
    return [...this.rows, ...alsoIn].some(
      (row) =>
        row.id === record.id ||
        (record.clientMessageId !== null &&
          row.sessionId === record.sessionId &&
          row.clientMessageId === record.clientMessageId),
    );
  }
}

class RecordingObserver extends EventEmitter2 {
  readonly calls: { sessionId: string; contents: string[]; revision: number }[] = [];
  readonly failures: string[] = [];

  constructor() {
    super();
    this.on(MessagesStored.event, (event: MessagesStored) =>
      this.calls.push({
        sessionId: event.sessionId,
        contents: event.messages.map((record: MessageRecord) => record.content),
        revision: event.revision,
      }),
    );
    this.on(WriteFailed.event, (event: WriteFailed) => this.failures.push(event.sessionId));
  }
}

interface LogLine {
  level: string;
  message: string;
  context: string | undefined;
}

class CapturingLogger implements LoggerService {
  readonly lines: LogLine[] = [];

  log(message: unknown, ...params: unknown[]): void {
    this.record('log', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.record('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.record('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.record('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.record('verbose', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.record('fatal', message, params);
  }

  /** Lines the service under test logged, optionally of one level and containing `text`. */
  ofService(level?: string, text?: string): LogLine[] {
    return this.lines.filter(
      (line) =>
        line.context === TranscriptService.name &&
        (level === undefined || line.level === level) &&
        (text === undefined || line.message.includes(text)),
    );
  }

  private record(level: string, message: unknown, params: unknown[]): void {
    const context = params.at(-1);
    this.lines.push({
      level,
      message: String(message),
      context: typeof context === 'string' ? context : undefined,
    });
  }
}

interface SpoolFileView {
  fileName: string;
  session_key: string;
  reason: string;
  data: { session_id: string; message: { id: string; content: string } };
}

/** The spool files in `directory`, in file-name (drop) order. */
async function spoolFiles(directory: string): Promise<SpoolFileView[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return [];
    throw error;
  }
  const pending = names.filter((name) => /^pending-.+\.json$/.test(name)).sort();
  return Promise.all(
    pending.map(async (fileName) => ({
      fileName,
      ...(JSON.parse(await readFile(join(directory, fileName), 'utf8')) as Omit<
        SpoolFileView,
        'fileName'
      >),
    })),
  );
}

function spooledContents(files: SpoolFileView[]): string[] {
  return files.map((file) => file.data.message.content);
}

function user(content: string, clientMessageId?: string): NewMessage {
  return { role: MessageRole.USER, content, clientMessageId };
}

function sessionStatus(sut: TranscriptService, sessionId: string): PendingSessionStatus {
  return (
    sut.pendingStatus().sessions.find((session) => session.sessionId === sessionId) ?? {
      sessionId,
      pending: 0,
      consecutiveFailures: 0,
      hasSpooledMessages: false,
    }
  );
}

/** Only the `wanted` contents, in the order they occur. */
function subsequence(contents: string[], wanted: string[]): string[] {
  return contents.filter((content) => wanted.includes(content));
}

async function counterValue(metrics: MetricsService, name: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  return (await metric.get()).values.reduce((sum, sample) => sum + sample.value, 0);
}

/** A liveness bound for an append that must not wait on something held (not a sleep). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------

describe(TranscriptService.name, () => {
  let root: string;
  let spoolDir: string;
  let logs: CapturingLogger;
  const started: TranscriptService[] = [];

  interface Harness {
    sut: TranscriptService;
    store: BrokenThenHealedStore;
    observer: RecordingObserver;
    metrics: MetricsService;
    config: ScribeConfig;
  }

  async function start(
    variables: Record<string, string> = {},
    store = new BrokenThenHealedStore(),
  ): Promise<Harness> {
    const config = ScribeConfig.fromVariables({
      DATA_DIR: root,
      SPOOL_DIR: spoolDir,
      MAX_PENDING_PER_SESSION: '200',
      DB_RETRY_INTERVAL_MS: '0',
      ...variables,
    });
    const metrics = new MetricsService();
    const spool = new SpoolService(config, metrics);
    await spool.onModuleInit();
    const observer = new RecordingObserver();
    const sut = new TranscriptService(store, spool, observer, config, metrics);
    started.push(sut);
    return { sut, store, observer, metrics, config };
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-transcript-'));
    spoolDir = join(root, 'spool');
    logs = new CapturingLogger();
    Logger.overrideLogger(logs);
  });

  afterEach(async () => {
    // Stops timers and waits for background flushes before the directory goes away.
    for (const service of started.splice(0)) await service.beforeApplicationShutdown();
    // overrideLogger(true) would switch logging off in Nest 12: put a console logger back.
    Logger.overrideLogger(new ConsoleLogger());
    await rm(root, { recursive: true, force: true });
  });

  describe('pending cap and spool', () => {
    it('spools the oldest messages past the cap and drains them in drop order once the database heals', async () => {
      const { sut, store } = await start({ MAX_PENDING_PER_SESSION: '5' });

      for (let i = 0; i < 8; i++) {
        expect((await sut.append('sess-1', [user(`msg${i}`)])).status).toBe(AppendStatus.QUEUED);
      }

      const files = await spoolFiles(spoolDir);
      expect(files).toHaveLength(3);
      expect(files.every((file) => file.reason === SPOOL_REASON_CAP_DROP)).toBe(true);
      expect(spooledContents(files)).toEqual(['msg0', 'msg1', 'msg2']);
      const spoolWarnings = logs.ofService('warn', 'spooled oldest message');
      expect(spoolWarnings).toHaveLength(3);
      for (const line of spoolWarnings) expect(line.message).toContain(spoolDir);

      store.broken = false;
      const recovered = await sut.append('sess-1', [
        { role: MessageRole.ASSISTANT, content: 'recovered' },
      ]);

      expect(recovered.status).toBe(AppendStatus.PERSISTED);
      const stored = store.contents('sess-1');
      expect(stored).toEqual(
        expect.arrayContaining(['msg3', 'msg4', 'msg5', 'msg6', 'msg7', 'recovered']),
      );
      expect(subsequence(stored, ['msg0', 'msg1', 'msg2'])).toEqual(['msg0', 'msg1', 'msg2']);
      expect(await spoolFiles(spoolDir)).toEqual([]);
      expect(sessionStatus(sut, 'sess-1')).toMatchObject({
        pending: 0,
        hasSpooledMessages: false,
      });
      expect(sut.pendingStatus().totalPending).toBe(0);
      // The transcript reads back by orderKey: replayed drops keep their accepted place.
      const byOrderKey = [...store.rows].sort((left, right) =>
        left.orderKey < right.orderKey ? -1 : left.orderKey > right.orderKey ? 1 : 0,
      );
      expect(byOrderKey.map((row) => row.content)).toEqual([
        ...Array.from({ length: 8 }, (_, i) => `msg${i}`),
        'recovered',
      ]);
    });

    it("drains only the writing session's spool files", async () => {
      const { sut, store } = await start({ MAX_PENDING_PER_SESSION: '3' });
      for (let i = 0; i < 4; i++) {
        await sut.append('sess-a', [user(`a${i}`)]);
        await sut.append('sess-b', [user(`b${i}`)]);
      }
      const dropped = await spoolFiles(spoolDir);
      expect(dropped.map((file) => file.session_key).sort()).toEqual(['sess-a', 'sess-b']);

      store.broken = false;
      // Recovery also starts a background flush of every session; sess-b's writes are held
      // so that anything that happens to its spool file could only come from sess-a's drain.
      const sessionB = store.holdWrites((record) => record.sessionId === 'sess-b');
      try {
        // Bounded: a drain that reached into sess-b's files would wait on the held write.
        const goA = await within(sut.append('sess-a', [user('go-a')]), 2_000, 'append to sess-a');
        expect(goA.status).toBe(AppendStatus.PERSISTED);

        const remaining = await spoolFiles(spoolDir);
        expect(remaining).toHaveLength(1);
        expect(remaining[0].session_key).toBe('sess-b');
        expect(spooledContents(remaining)).toEqual(['b0']);
        expect(store.contents('sess-a')).toContain('a0');
        expect(store.contents('sess-b')).toEqual([]);
      } finally {
        sessionB.open();
      }
    });

    it('degrades to a plain drop, logged, when the spool cannot be written', async () => {
      const blocker = join(root, 'blocker');
      await writeFile(blocker, 'not a directory');
      const { sut, store, metrics } = await start({
        SPOOL_DIR: join(blocker, 'spool'),
        MAX_PENDING_PER_SESSION: '4',
      });

      let mostPending = 0;
      for (let i = 0; i < 9; i++) {
        expect((await sut.append('sess-x', [user(`msg${i}`)])).status).toBe(AppendStatus.QUEUED);
        mostPending = Math.max(mostPending, sessionStatus(sut, 'sess-x').pending);
      }

      expect(mostPending).toBe(4);
      expect(await readdir(root)).toEqual(['blocker']);
      expect((await stat(blocker)).isFile()).toBe(true);
      expect(logs.ofService('warn', 'on-disk spool unavailable')).toHaveLength(5);
      expect(await counterValue(metrics, 'scribe_messages_dropped_total')).toBe(5);
      expect(sessionStatus(sut, 'sess-x').hasSpooledMessages).toBe(false);

      store.broken = false;
      const writesBefore = store.writeCalls.length;
      expect((await sut.append('sess-x', [user('fin')])).status).toBe(AppendStatus.PERSISTED);

      expect(store.contents().at(-1)).toBe('fin');
      expect(store.contents()).toEqual(expect.arrayContaining(['msg6', 'msg7', 'msg8']));
      const writtenSinceHeal = store.writeCalls
        .slice(writesBefore)
        .flatMap((writes) => writes.flatMap((write) => write.records.map((r) => r.content)));
      expect(subsequence(writtenSinceHeal, ['msg0', 'msg1', 'msg2', 'msg3', 'msg4'])).toEqual([]);
      expect(logs.ofService('warn', 'Could not drain')).toEqual([]);
    });

    it('does not drop messages held in memory once the database is back (spool unavailable)', async () => {
      const blocker = join(root, 'blocker');
      await writeFile(blocker, 'not a directory');
      const { sut, store, metrics } = await start({
        SPOOL_DIR: join(blocker, 'spool'),
        MAX_PENDING_PER_SESSION: '4',
      });
      for (let i = 0; i < 9; i++) await sut.append('sess-x', [user(`msg${i}`)]);
      expect(await counterValue(metrics, 'scribe_messages_dropped_total')).toBe(5);

      store.broken = false;
      expect((await sut.append('sess-x', [user('fin')])).status).toBe(AppendStatus.PERSISTED);

      // msg5..msg8 were answered QUEUED ("will be stored once it can"); the database can now.
      expect(store.contents()).toEqual(['msg5', 'msg6', 'msg7', 'msg8', 'fin']);
      expect(await counterValue(metrics, 'scribe_messages_dropped_total')).toBe(5);
    });

    it('keeps the spool files when their replay fails, and replays them on a later write', async () => {
      const { sut, store } = await start({ MAX_PENDING_PER_SESSION: '3' });
      for (let i = 0; i < 5; i++) await sut.append('sess-r', [user(`m${i}`)]);
      expect(spooledContents(await spoolFiles(spoolDir))).toEqual(['m0', 'm1']);

      // Live writes work again, but m0, m1 and m2 still fail.
      store.broken = false;
      store.failing = (record) => ['m0', 'm1', 'm2'].includes(record.content);
      await sut.append('sess-r', [user('go')]);

      expect(spooledContents(await spoolFiles(spoolDir))).toEqual(['m0', 'm1', 'm2']);
      expect(sessionStatus(sut, 'sess-r').hasSpooledMessages).toBe(true);
      expect(subsequence(store.contents(), ['m0', 'm1', 'm2'])).toEqual([]);

      store.failing = () => false;
      expect((await sut.append('sess-r', [user('again')])).status).toBe(AppendStatus.PERSISTED);

      expect(store.contents()).toEqual(
        expect.arrayContaining(['m0', 'm1', 'm2', 'm3', 'm4', 'go', 'again']),
      );
      expect(store.contents()).toHaveLength(7);
      expect(subsequence(store.contents(), ['m0', 'm1', 'm2'])).toEqual(['m0', 'm1', 'm2']);
      expect(await spoolFiles(spoolDir)).toEqual([]);
      expect(sessionStatus(sut, 'sess-r').hasSpooledMessages).toBe(false);
    });

    it('answers PERSISTED for an append that was stored even when the spool drain after it fails', async () => {
      const { sut, store } = await start({ MAX_PENDING_PER_SESSION: '3' });
      for (let i = 0; i < 5; i++) await sut.append('sess-r', [user(`m${i}`)]);
      expect(spooledContents(await spoolFiles(spoolDir))).toEqual(['m0', 'm1']);

      // Everything but the two spooled messages can be stored.
      store.broken = false;
      store.failing = (record) => ['m0', 'm1'].includes(record.content);
      const result = await sut.append('sess-r', [user('go')]);

      expect(store.contents()).toContain('go');
      expect(result.status).toBe(AppendStatus.PERSISTED);
      // The failed replay kept its files and the session stays marked for the next drain.
      expect(subsequence(spooledContents(await spoolFiles(spoolDir)), ['m0', 'm1'])).toEqual([
        'm0',
        'm1',
      ]);
      expect(subsequence(store.contents(), ['m0', 'm1'])).toEqual([]);
      expect(sessionStatus(sut, 'sess-r').hasSpooledMessages).toBe(true);
    });
  });

  describe('QUEUED answers', () => {
    it('answers a retry of a queued message with the same id and queues nothing new', async () => {
      const { sut, store } = await start();
      const first = await sut.append('sess-1', [user('hello', 'c-1')]);
      expect(first.status).toBe(AppendStatus.QUEUED);
      const writesBefore = store.writeCalls.length;

      const retry = await sut.append('sess-1', [user('hello', 'c-1')]);

      expect(retry.status).toBe(AppendStatus.QUEUED);
      expect(retry.records.map((record) => record.id)).toEqual([first.records[0].id]);
      expect(sessionStatus(sut, 'sess-1').pending).toBe(1);
      expect(store.writeCalls).toHaveLength(writesBefore);

      const mixed = await sut.append('sess-1', [user('hello', 'c-1'), user('more', 'c-2')]);
      expect(mixed.status).toBe(AppendStatus.QUEUED);
      expect(mixed.records[0].id).toBe(first.records[0].id);
      expect(mixed.records[1].id).not.toBe(first.records[0].id);
      expect(sessionStatus(sut, 'sess-1').pending).toBe(2);

      store.broken = false;
      expect((await sut.append('sess-1', [user('next')])).status).toBe(AppendStatus.PERSISTED);
      const afterHeal = await sut.append('sess-1', [user('hello', 'c-1')]);

      expect(afterHeal.status).toBe(AppendStatus.PERSISTED);
      expect(afterHeal.records[0].id).toBe(first.records[0].id);
      expect(store.rows.filter((row) => row.clientMessageId === 'c-1')).toHaveLength(1);
      expect(store.contents('sess-1')).toEqual(['hello', 'more', 'next']);
    });
  });

  describe('failure logging', () => {
    it('logs the first two consecutive failures of a session at WARN and later ones at ERROR', async () => {
      const { sut, store } = await start();
      const failureLines = () =>
        logs.ofService(undefined, 'Database write for session sess-1 failed');

      for (let i = 1; i <= 4; i++) await sut.append('sess-1', [user(`m${i}`)]);

      const lines = failureLines();
      expect(lines.map((line) => line.level)).toEqual(['warn', 'warn', 'error', 'error']);
      lines.forEach((line, index) => {
        const count = index + 1;
        expect(line.message).toContain('sess-1');
        expect(line.message).toMatch(new RegExp(`\\b${count} consecutive failure`));
        expect(line.message).toMatch(new RegExp(`\\b${count} pending`));
        expect(line.message).toContain('db unavailable');
      });
      expect(sessionStatus(sut, 'sess-1').consecutiveFailures).toBe(4);

      // A success starts the count again.
      store.broken = false;
      await sut.append('sess-1', [user('ok')]);
      store.broken = true;
      await sut.append('sess-1', [user('m5')]);

      const last = failureLines().at(-1);
      expect(last?.level).toBe('warn');
      expect(last?.message).toMatch(/\b1 consecutive failure/);
    });
  });

  describe('database probing', () => {
    it('answers QUEUED at once without a write while another write probes the failing database', async () => {
      const { sut, store } = await start();
      await sut.append('sess-a', [user('a0')]);
      const probe = store.holdWrites(() => true);
      const first = sut.append('sess-a', [user('a1')]);
      try {
        await probe.entered;
        const writesBefore = store.writeCalls.length;

        const second = await within(sut.append('sess-b', [user('b0')]), 2_000, 'append to sess-b');

        expect(second.status).toBe(AppendStatus.QUEUED);
        expect(store.writeCalls).toHaveLength(writesBefore);
      } finally {
        store.broken = false;
        probe.open();
      }
      expect((await first).status).toBe(AppendStatus.PERSISTED);
      // The successful probe flushes the other session in the background.
      await store.rowsReached(3);
      expect(store.contents('sess-a')).toEqual(['a0', 'a1']);
      expect(store.contents('sess-b')).toEqual(['b0']);
    });
  });

  describe('background retry', () => {
    it('stores every queued message, in order, once the database heals, without another append', async () => {
      const { sut, store } = await start({ DB_RETRY_INTERVAL_MS: '20' });
      await sut.onApplicationBootstrap();
      for (const content of ['r0', 'r1', 'r2']) await sut.append('sess-1', [user(content)]);
      for (const content of ['s0', 's1']) await sut.append('sess-2', [user(content)]);
      expect(sut.pendingStatus().totalPending).toBe(5);

      store.broken = false;
      await store.rowsReached(5);

      expect(store.contents('sess-1')).toEqual(['r0', 'r1', 'r2']);
      expect(store.contents('sess-2')).toEqual(['s0', 's1']);
    }, 15_000);
  });

  describe('shutdown', () => {
    it('spools every pending message with reason shutdown and refuses later appends', async () => {
      const { sut } = await start();
      await sut.append('sess-1', [user('m0')]);
      await sut.append('sess-2', [user('n0')]);
      await sut.append('sess-1', [user('m1')]);

      await sut.beforeApplicationShutdown();

      const files = await spoolFiles(spoolDir);
      expect(files.every((file) => file.reason === SPOOL_REASON_SHUTDOWN)).toBe(true);
      const bySession = (sessionId: string) =>
        spooledContents(files.filter((file) => file.session_key === sessionId));
      expect(bySession('sess-1')).toEqual(['m0', 'm1']);
      expect(bySession('sess-2')).toEqual(['n0']);
      expect(files).toHaveLength(3);
      expect(sut.pendingStatus().totalPending).toBe(0);
      const summary = logs.ofService('log', 'spooled 3 pending message(s)');
      expect(summary).toHaveLength(1);
      expect(summary[0].message).toContain(spoolDir);

      const late = sut.append('sess-1', [user('late')]);
      await expect(late).rejects.toBeInstanceOf(ScribeException);
      await expect(late).rejects.toMatchObject({ code: ScribeErrorCode.ShuttingDown });
      expect(sut.isAccepting).toBe(false);
    });
  });

  describe('boot replay', () => {
    const foreignFile = 'pending-000000000000001.000000.f0re1gn0.json';

    async function writeSpool(): Promise<void> {
      const directory = new SpoolDirectory(spoolDir);
      await directory.init();
      await directory.write(acceptedRecord('sess-p', 'p0'), SPOOL_REASON_CAP_DROP);
      await directory.write(acceptedRecord('sess-q', 'q0'), SPOOL_REASON_SHUTDOWN);
      await directory.write(acceptedRecord('sess-p', 'p1'), SPOOL_REASON_SHUTDOWN);
      await directory.write(acceptedRecord('sess-q', 'q1'), SPOOL_REASON_CAP_DROP);
      await directory.write(acceptedRecord('sess-p', 'p2'), SPOOL_REASON_CAP_DROP);
      // A file of a reason the transcript does not own is never touched.
      const other = acceptedRecord('sess-p', 'other');
      await writeFile(
        join(spoolDir, foreignFile),
        JSON.stringify({
          session_key: 'sess-p',
          reason: 'session_flush',
          ts: 1,
          seq: 1,
          data: {
            session_id: 'sess-p',
            message: {
              id: other.id,
              role: other.role,
              content: other.content,
              clientMessageId: null,
              toolName: null,
              toolCallId: null,
              toolCalls: null,
              metadata: null,
              acceptedAt: other.acceptedAt,
              orderKey: other.orderKey,
            },
          },
        }),
      );
    }

    it('replays spooled messages of every session in drop order into a healthy store', async () => {
      await writeSpool();
      const { sut, store } = await start();
      store.broken = false;

      await sut.onApplicationBootstrap();

      expect(store.contents('sess-p')).toEqual(['p0', 'p1', 'p2']);
      expect(store.contents('sess-q')).toEqual(['q0', 'q1']);
      expect((await spoolFiles(spoolDir)).map((file) => file.fileName)).toEqual([foreignFile]);
      expect(sut.pendingStatus().sessions).toEqual([]);
    });

    it('keeps the files when the database is down and drains each session on its next write', async () => {
      await writeSpool();
      const { sut, store } = await start();

      await sut.onApplicationBootstrap();

      expect(await spoolFiles(spoolDir)).toHaveLength(6);
      expect(sessionStatus(sut, 'sess-p').hasSpooledMessages).toBe(true);
      expect(sessionStatus(sut, 'sess-q').hasSpooledMessages).toBe(true);
      expect(
        logs.ofService('warn', 'Boot replay left spooled messages of 2 session(s)'),
      ).toHaveLength(1);

      store.broken = false;
      expect((await sut.append('sess-p', [user('p-live')])).status).toBe(AppendStatus.PERSISTED);

      expect(subsequence(store.contents('sess-p'), ['p0', 'p1', 'p2'])).toEqual(['p0', 'p1', 'p2']);
      expect(
        (await spoolFiles(spoolDir)).filter(
          (file) => file.session_key === 'sess-p' && file.fileName !== foreignFile,
        ),
      ).toEqual([]);
      expect(sessionStatus(sut, 'sess-p').hasSpooledMessages).toBe(false);

      await sut.append('sess-q', [user('q-live')]);

      expect(subsequence(store.contents('sess-q'), ['q0', 'q1'])).toEqual(['q0', 'q1']);
      expect((await spoolFiles(spoolDir)).map((file) => file.fileName)).toEqual([foreignFile]);
      expect(sessionStatus(sut, 'sess-q').hasSpooledMessages).toBe(false);
    });

    it('counts a spooled message that is stored already as replayed, without a duplicate row', async () => {
      const already = acceptedRecord('sess-i', 'stored before the crash');
      const later = acceptedRecord('sess-i', 'never stored');
      const directory = new SpoolDirectory(spoolDir);
      await directory.init();
      await directory.write(already, SPOOL_REASON_SHUTDOWN);
      await directory.write(later, SPOOL_REASON_SHUTDOWN);
      const { sut, store, metrics, observer } = await start();
      store.broken = false;
      store.rows.push(already);

      await sut.onApplicationBootstrap();

      expect(store.rows.map((row) => row.id)).toEqual([already.id, later.id]);
      expect(await spoolFiles(spoolDir)).toEqual([]);
      expect(await counterValue(metrics, 'scribe_spool_replays_total')).toBe(2);
      // The observer hears of what was stored now, at the revision it left the session.
      expect(observer.calls).toEqual([
        { sessionId: 'sess-i', contents: ['never stored'], revision: 2 },
      ]);
    });
  });

  describe('uniqueness conflicts', () => {
    it('answers with the stored message when another instance stored a retry meanwhile, and does not call it an outage', async () => {
      const { sut, store } = await start();
      store.broken = false;
      // Between this append's lookup and its write, another instance stores the same retry.
      const elsewhere = acceptedRecord('sess-c', 'hello', { clientMessageId: 'c-1' });
      const held = store.holdLookups('sess-c');
      const append = sut.append('sess-c', [user('hello', 'c-1')]);
      await held.entered;
      store.rows.push(elsewhere);
      held.open();

      const result = await append;

      expect(result.status).toBe(AppendStatus.PERSISTED);
      expect(result.records.map((record) => record.id)).toEqual([elsewhere.id]);
      expect(store.contents('sess-c')).toEqual(['hello']);
      expect(sut.pendingStatus().databaseWritable).toBe(true);
      expect((await sut.append('sess-other', [user('fine')])).status).toBe(AppendStatus.PERSISTED);
    });
  });

  describe('independent sessions', () => {
    it('completes an append to another session while one session waits on its retry lookup', async () => {
      const { sut, store } = await start();
      store.broken = false;
      const held = store.holdLookups('sess-slow');
      const slow = sut.append('sess-slow', [user('slow', 'c-slow')]);
      try {
        await held.entered;

        const other = await within(
          sut.append('sess-fast', [user('fast')]),
          2_000,
          'append to sess-fast',
        );

        expect(other.status).toBe(AppendStatus.PERSISTED);
        expect(store.contents()).toEqual(['fast']);
      } finally {
        held.open();
      }
      expect((await slow).status).toBe(AppendStatus.PERSISTED);
      expect(store.contents()).toEqual(['fast', 'slow']);
    });
  });

  describe('input checks', () => {
    const limits = { MAX_MESSAGE_BYTES: '64', MAX_BODY_BYTES: String(64 + 65_536) };

    it('refuses content over MAX_MESSAGE_BYTES, counted in UTF-8 bytes, naming the field', async () => {
      const { sut, store } = await start(limits);
      store.broken = false;
      // 22 characters, 66 bytes.
      const tooLong = '€'.repeat(22);

      const refused = sut.append('sess-1', [user('fine'), user(tooLong)]);

      await expect(refused).rejects.toBeInstanceOf(ScribeException);
      await expect(refused).rejects.toMatchObject({
        code: ScribeErrorCode.InvalidInput,
        field: 'messages.1.content',
      });
      const withMetadata = sut.append('sess-1', [
        { ...user('x'.repeat(40)), metadata: { note: 'y'.repeat(30) } },
      ]);
      await expect(withMetadata).rejects.toMatchObject({
        code: ScribeErrorCode.InvalidInput,
        field: 'messages.0',
      });
      expect(store.writeCalls).toEqual([]);
      expect(sut.pendingStatus().totalPending).toBe(0);

      expect((await sut.append('sess-1', [user('x'.repeat(64))])).status).toBe(
        AppendStatus.PERSISTED,
      );
    });

    it('refuses a batch that repeats a clientMessageId, naming the field', async () => {
      const { sut, store } = await start(limits);
      store.broken = false;

      const refused = sut.append(
        'sess-1',
        [user('one', 'c-1'), user('two', 'c-2'), user('three', 'c-1')],
        (index) => `input.messages[${index}]`,
      );

      await expect(refused).rejects.toBeInstanceOf(ScribeException);
      await expect(refused).rejects.toMatchObject({
        code: ScribeErrorCode.InvalidInput,
        field: 'input.messages[2].clientMessageId',
      });
      expect(store.writeCalls).toEqual([]);
      expect(store.rows).toEqual([]);
      expect(sut.pendingStatus().totalPending).toBe(0);
    });
  });
});
