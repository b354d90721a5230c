import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { describeError } from '../common/errors/describe-error.js';
import {
  MessageStore,
  numberInserted,
  type SessionWrite,
  type WrittenSession,
} from './message-store.js';
import { type SqliteStoreSettings, type WrittenPositions } from './sqlite-writer.js';
import { StoredAtStamps } from './statement-runner.js';
import {
  errorFrom,
  packWrites,
  type WriterCall,
  type WriterReply,
} from './sqlite-writer-protocol.js';

/** The code of the error a call fails with when the writer thread died: an outage. */
export const WRITER_THREAD_LOST = 'SCRIBE_SQLITE_WRITER_LOST';

/**
 * The SQLite message store: a SqliteWriter (which owns the write connection and its promises)
 * in a worker thread of its own. A transaction is several statements, and with the connection
 * on the main thread each one waited for an event loop busy parsing and answering requests:
 * half of a write transaction's time went to that wait (npm run bench). In its own thread the
 * transaction runs unbroken, and the main thread hands over a group in one message. A thread
 * that dies fails what it was asked (the callers journal it) and the next call starts another.
 */
export class SqliteMessageStore
  extends MessageStore
  implements OnModuleInit, OnApplicationShutdown
{
  private readonly logger = new Logger(SqliteMessageStore.name);
  private worker: Worker | null = null;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private lastId = 0;
  // Here, not in the thread: a thread that replaces a lost one must not issue a stamp again.
  private readonly stamps: StoredAtStamps;

  /** `startWorker` starts the writer's thread (tests start fakes). */
  constructor(
    private readonly settings: SqliteStoreSettings,
    private readonly startWorker: (settings: SqliteStoreSettings) => Worker = (workerData) =>
      new Worker(sqliteWriterScript(), { workerData }),
    now: () => number = Date.now,
  ) {
    super();
    this.stamps = new StoredAtStamps(now);
  }

  // Housekeeping only: an instance must start (and journal) while another process holds the
  // write lock, so a failure here is a warning.
  async onModuleInit(): Promise<void> {
    await this.call({ op: 'prune' }).catch((error: unknown) =>
      this.logger.warn(`Old heartbeat rows not pruned at start: ${describeError(error)}`),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    await this.call({ op: 'close' }).catch((error: unknown) => {
      this.logger.warn(`Closing the SQLite write connection failed: ${describeError(error)}`);
    });
    this.worker = null;
    const asked = this.lastId;
    await worker.terminate();
    // A call still unanswered waited on the thread just ended (a later one started another).
    this.fail(threadLost(`the SQLite writer thread was ended at shutdown`), asked);
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    const positions = (await this.call({
      op: 'write',
      writes: packWrites(writes),
      storedAt: this.stamps.next(),
    })) as WrittenPositions[];
    const results = positions.map(({ skipped, revision, seqs, orderKeys }, index) => {
      const { records } = writes[index];
      const skippedAt = new Set(skipped);
      return {
        inserted: records.filter((_, position) => !skippedAt.has(position)),
        skipped: skipped.map((position) => records[position]),
        revision,
        seqs,
        ...(orderKeys ? { orderKeys } : {}),
      };
    });
    numberInserted(results);
    return results;
  }

  async heartbeat(): Promise<void> {
    await this.call({ op: 'heartbeat' });
  }

  /** The settings of the write connection as SQLite reports them, for checks and admins. */
  async connectionSettings(): Promise<{ journalMode: string; synchronous: number }> {
    return (await this.call({ op: 'settings' })) as { journalMode: string; synchronous: number };
  }

  private call(call: WriterCall): Promise<unknown> {
    const worker = this.worker ?? this.start();
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...call });
    });
  }

  private start(): Worker {
    const worker = this.startWorker(this.settings);
    // Never what keeps the process alive: the server is, and shutdown ends the thread.
    worker.unref();
    worker.on('message', (reply: WriterReply) => this.answer(reply));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private answer(reply: WriterReply): void {
    if ('log' in reply) {
      this.logger.error(reply.log);
      return;
    }
    const waiter = this.waiting.get(reply.id);
    this.waiting.delete(reply.id);
    if (reply.error) waiter?.reject(errorFrom(reply.error));
    else waiter?.resolve(reply.value);
  }

  /** The thread died: what it was asked fails as an outage, and the next call starts anew. */
  private lost(worker: Worker, cause: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    const error = threadLost(`the SQLite writer thread failed: ${describeError(cause)}`);
    this.logger.error(error.message);
    this.fail(error, this.lastId);
  }

  /** Fails the calls still waiting, up to the one numbered `upTo`. */
  private fail(error: Error, upTo: number): void {
    for (const [id, waiter] of this.waiting) {
      if (id > upTo) continue;
      this.waiting.delete(id);
      waiter.reject(error);
    }
  }
}

/** What a call fails with when its thread ended before it answered: an outage. */
function threadLost(message: string): Error {
  return Object.assign(new Error(message), { code: WRITER_THREAD_LOST });
}

/**
 * The worker's script, beside this file once built. A test runner that runs the sources (.ts)
 * uses the build in dist/, which `npm test` makes first.
 */
export function sqliteWriterScript(): URL {
  return import.meta.url.endsWith('.ts')
    ? new URL('../../dist/database/sqlite-writer.worker.js', import.meta.url)
    : new URL('./sqlite-writer.worker.js', import.meta.url);
}
