import { ConsoleLogger, Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { classifyDatabaseError } from './database-errors.js';
import {
  SqliteMessageStore,
  WRITER_THREAD_LOST,
  sqliteWriterScript,
} from './sqlite-message-store.js';

// A writer thread that answers as told by its workerData, instead of SQLite.
const FAKE_WRITER = `
const { parentPort, workerData } = require('node:worker_threads');
parentPort.on('message', (request) => {
  if (request.op === workerData.exitOn) process.exit(3);
  if (request.op === workerData.silentOn) return;
  if (request.op === workerData.throwOn) throw new Error('broken writer');
  if (workerData.failWith) return parentPort.postMessage({ id: request.id, error: workerData.failWith });
  if (request.op === 'prune') parentPort.postMessage({ log: 'the writer says so' });
  if (request.op === 'close') parentPort.postMessage({ log: 'closed' });
  const value =
    request.op === 'write'
      ? request.writes.sessionIds.map((sessionId, index) => ({ skipped: workerData.skipped[index] ?? [], revision: workerData.echoStamp ? request.storedAt : index + 1, ...(workerData.orderKeys ? { seqs: [index + 1], orderKeys: workerData.orderKeys[index] } : {}) }))
      : request.op === 'settings' ? { ops: workerData.ops } : undefined;
  workerData.ops.push(request.op);
  parentPort.postMessage({ id: request.id, value });
});
`;

const SETTINGS = {
  path: '/nowhere',
  synchronous: 'FULL' as const,
  busyTimeoutMs: 1,
  instanceId: 'i',
};

describe(SqliteMessageStore.name, () => {
  let logs: CapturingLogger;
  let started: Worker[];
  let sut: SqliteMessageStore | undefined;

  beforeEach(() => {
    logs = new CapturingLogger();
    Logger.overrideLogger(logs);
    started = [];
  });

  afterEach(async () => {
    await sut?.onApplicationShutdown();
    await Promise.all(started.map((worker) => worker.terminate()));
    Logger.overrideLogger(new ConsoleLogger());
  });

  function storeWith(behaviour: {
    skipped?: number[][];
    orderKeys?: (string[] | undefined)[];
    failWith?: object;
    exitOn?: string;
    throwOn?: string;
    silentOn?: string;
  }) {
    sut = new SqliteMessageStore(SETTINGS, () => {
      const worker = new Worker(FAKE_WRITER, {
        eval: true,
        workerData: { skipped: [], ops: [], ...behaviour },
      });
      started.push(worker);
      return worker;
    });
    return sut;
  }

  it('hands a group over in one message and answers each write with its records, by position', async () => {
    const a = [acceptedRecord('a', '1'), acceptedRecord('a', '2'), acceptedRecord('a', '3')];
    const b = [acceptedRecord('b', '1')];
    const store = storeWith({ skipped: [[0, 2], []] });

    const results = await store.write([
      { sessionId: 'a', records: a },
      { sessionId: 'b', records: b },
    ]);

    expect(results).toEqual([
      { inserted: [a[1]], skipped: [a[0], a[2]], revision: 1 },
      { inserted: b, skipped: [], revision: 2 },
    ]);
    // The answers hold the caller's own records, not copies.
    expect(results[1].inserted[0]).toBe(b[0]);
    expect(results[0].skipped[1]).toBe(a[2]);
    expect(started).toHaveLength(1);
  });

  it('marks the records, once written, with the keys and numbers the writer stored them with', async () => {
    const a = acceptedRecord('a', '1');
    const b = acceptedRecord('b', '1');
    const issued = b.orderKey;
    const store = storeWith({ orderKeys: [['stored-key'], undefined] });

    const results = await store.write([
      { sessionId: 'a', records: [a], after: 'stored' },
      { sessionId: 'b', records: [b] },
    ]);

    expect(results[0]).toEqual({
      inserted: [a],
      skipped: [],
      revision: 1,
      seqs: [1],
      orderKeys: ['stored-key'],
    });
    expect(results[1]).not.toHaveProperty('orderKeys');
    expect(a).toMatchObject({ orderKey: 'stored-key', commitSeq: 1 });
    expect(b).toMatchObject({ orderKey: issued, commitSeq: 2 });
  });

  it("rejects with the writer's error as the driver gave it, so that it is classified the same", async () => {
    const store = storeWith({
      failWith: {
        name: 'Error',
        message: 'SQLITE_CONSTRAINT: UNIQUE',
        code: 'SQLITE_CONSTRAINT',
        errno: 19,
      },
    });

    const error: unknown = await store.heartbeat().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      message: 'SQLITE_CONSTRAINT: UNIQUE',
      code: 'SQLITE_CONSTRAINT',
      errno: 19,
    });
    expect(classifyDatabaseError(error).kind).toBe('refused');
  });

  it('fails what a dying thread was asked as an outage, logs it, and starts another for the next call', async () => {
    const store = storeWith({ exitOn: 'write' });

    const error: unknown = await store
      .write([{ sessionId: 's', records: [acceptedRecord('s', 'x')] }])
      .catch((caught: unknown) => caught);

    // The code operators find in the log and the pending view, by its name.
    expect(error).toMatchObject({ code: 'SCRIBE_SQLITE_WRITER_LOST' });
    expect(classifyDatabaseError(error).kind).toBe('unavailable');
    expect(logs.messages('error')).toEqual(['the SQLite writer thread failed: exited with code 3']);
    await store.heartbeat();
    expect(started).toHaveLength(2);
  });

  it('stamps each transaction once, across the threads that replace one another', async () => {
    const store = new SqliteMessageStore(
      SETTINGS,
      () => {
        const worker = new Worker(FAKE_WRITER, {
          eval: true,
          workerData: { skipped: [], ops: [], exitOn: 'heartbeat', echoStamp: true },
        });
        started.push(worker);
        return worker;
      },
      () => 1000,
    );
    const write = () => store.write([{ sessionId: 's', records: [acceptedRecord('s', 'x')] }]);

    const [first] = await write();
    await store.heartbeat().catch(() => undefined);
    const [second] = await write();
    await store.onApplicationShutdown();

    // The writer answers the stamp it was given as the revision.
    expect([first.revision, second.revision]).toEqual([1000, 1001]);
    expect(started).toHaveLength(2);
  });

  it('fails what the thread was asked when it throws, with its error', async () => {
    const store = storeWith({ throwOn: 'heartbeat' });

    const error: unknown = await store.heartbeat().catch((caught: unknown) => caught);

    // (Under Jest the thread's Error comes from another realm, and is described as its text.)
    expect(error).toMatchObject({
      code: WRITER_THREAD_LOST,
      message: expect.stringMatching(/^the SQLite writer thread failed: (Error: )?broken writer$/),
    });
    expect(logs.messages('error')).toEqual([(error as Error).message]);
  });

  it('warns, and still ends the thread, when closing the connection fails at shutdown', async () => {
    const store = storeWith({
      failWith: { name: 'Error', message: 'I/O error', code: 'SQLITE_IOERR' },
    });
    await store.heartbeat().catch(() => undefined);
    const exited = new Promise((resolve) => started[0].once('exit', resolve));

    await store.onApplicationShutdown();

    expect(logs.messages('warn')).toEqual([
      'Closing the SQLite write connection failed: SQLITE_IOERR: I/O error',
    ]);
    expect(await exited).toBe(1);
  });

  it('runs the built worker script (under a test runner, the one in dist/)', () => {
    expect(sqliteWriterScript().href).toMatch(/\/dist\/database\/sqlite-writer\.worker\.js$/);
  });

  it('fails, as an outage, a call the thread had not answered when shutdown ended it', async () => {
    const store = storeWith({ silentOn: 'write' });
    const unanswered = store
      .write([{ sessionId: 's', records: [acceptedRecord('s', 'x')] }])
      .catch((caught: unknown) => caught);
    await store.heartbeat();

    await store.onApplicationShutdown();

    const error = await unanswered;
    expect(error).toMatchObject({
      code: WRITER_THREAD_LOST,
      message: 'the SQLite writer thread was ended at shutdown',
    });
    expect(classifyDatabaseError(error).kind).toBe('unavailable');
  });

  it("logs the writer's lines at ERROR, and only warns when pruning at start fails", async () => {
    storeWith({});
    await sut?.onModuleInit();
    expect(logs.messages('error')).toEqual(['the writer says so']);

    storeWith({ failWith: { name: 'Error', message: 'locked', code: 'SQLITE_BUSY' } });
    await sut?.onModuleInit();
    expect(logs.messages('warn')).toEqual([
      'Old heartbeat rows not pruned at start: SQLITE_BUSY: locked',
    ]);
  });

  it('closes the connection before it ends the thread at shutdown, and starts none to do so', async () => {
    const store = storeWith({});
    await store.onApplicationShutdown();
    expect(started).toHaveLength(0);

    await store.heartbeat();
    const [worker] = started;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    await store.onApplicationShutdown();

    expect(await exited).toBe(1);
    // The thread heard the close before it ended, and its end is no failure to report.
    expect(logs.messages('error')).toEqual(['closed']);
    // A call after shutdown starts afresh rather than talk to the ended thread.
    expect(await store.connectionSettings()).toEqual({ ops: ['settings'] });
    expect(started).toHaveLength(2);
  });
});
