import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { randomUUID } from 'node:crypto';
import { KeyedMutex } from '../common/concurrency/keyed-mutex.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { describeDatabaseError, isConstraintViolation } from '../database/database-errors.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  SPOOL_REASON_CAP_DROP,
  SPOOL_REASON_SHUTDOWN,
  type SpoolEntry,
} from '../spool/spool-directory.js';
import { SpoolService } from '../spool/spool.service.js';
import { MessagesStored, WriteFailed } from '../message/message-events.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';
import { AppendStatus } from './append-status.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { InMemoryPendingQueue, type PendingQueue } from './pending-queue.js';
import { MessageStore, type SessionWrite, type WriteResult } from '../database/message-store.js';

export interface AppendResult {
  records: MessageRecord[];
  status: AppendStatus;
}

export interface PendingSessionStatus {
  sessionId: string;
  pending: number;
  consecutiveFailures: number;
  hasSpooledMessages: boolean;
}

export interface PendingStatus {
  databaseWritable: boolean;
  lastDatabaseError: string | null;
  lastDatabaseErrorAt: number | null;
  totalPending: number;
  sessions: PendingSessionStatus[];
}

// How many queued messages one flush transaction takes from the head of a session's queue.
const FLUSH_CHUNK = 500;
// From this many consecutive failed writes of a session on, failures log at ERROR.
const LOUD_FAILURE_COUNT = 3;
// How often the background retry repeats that an outage goes on.
const OUTAGE_REPORT_INTERVAL_MS = 60_000;

/**
 * Owns appends: gives each accepted message its id and place, writes it, and when the
 * database cannot take it holds it in the session's pending queue (spooling the oldest to
 * disk past the cap) until a later write, the background retry or the next start stores it.
 */
@Injectable()
export class TranscriptService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(TranscriptService.name);
  private readonly locks = new KeyedMutex();
  private readonly orderKeys = new OrderKeyGenerator();
  private readonly writer: CoalescingWriter;
  private readonly pending: PendingQueue = new InMemoryPendingQueue();
  /** Sessions with messages in the spool that their next successful write must drain. */
  private readonly spooledSessions = new Set<string>();
  private readonly consecutiveFailures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private accepting = true;
  private databaseFailing = false;
  private probeInFlight = false;
  private lastDatabaseError: { message: string; at: number } | null = null;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryRun: Promise<void> | null = null;
  private lastOutageReport = 0;

  constructor(
    private readonly store: MessageStore,
    private readonly spool: SpoolService,
    private readonly events: EventEmitter2,
    private readonly config: ScribeConfig,
    private readonly metrics: MetricsService,
  ) {
    this.writer = new CoalescingWriter(store, isConstraintViolation);
    metrics.observeGauge('scribe_pending_messages', () => this.pending.total);
  }

  /**
   * Accepts `inputs` for `sessionId`, in order. `fieldOf(i)` names input i in errors.
   * Re-sent messages (same clientMessageId) come back as accepted the first time.
   */
  async append(
    sessionId: string,
    inputs: NewMessage[],
    fieldOf: (index: number) => string = (index) => `messages.${index}`,
  ): Promise<AppendResult> {
    if (!this.accepting) {
      throw new ScribeException(
        ScribeErrorCode.ShuttingDown,
        'This instance is shutting down and did not accept the append; retry it.',
      );
    }
    this.checkInputs(inputs, fieldOf);
    const task = this.locks.runExclusive(sessionId, () => this.appendLocked(sessionId, inputs));
    this.inFlight.add(task);
    try {
      return await task;
    } finally {
      this.inFlight.delete(task);
    }
  }

  /** False once shutdown has begun: appends are refused from then on. */
  get isAccepting(): boolean {
    return this.accepting;
  }

  /** Probes the database with a write transaction, in turn with the appends. */
  async probeDatabase(): Promise<void> {
    await this.writer.probe();
  }

  pendingStatus(): PendingStatus {
    const sessionIds = new Set([
      ...this.pending.sessions(),
      ...this.spooledSessions,
      ...this.consecutiveFailures.keys(),
    ]);
    return {
      databaseWritable: !this.databaseFailing,
      lastDatabaseError: this.lastDatabaseError?.message ?? null,
      lastDatabaseErrorAt: this.lastDatabaseError?.at ?? null,
      totalPending: this.pending.total,
      sessions: [...sessionIds].sort().map((sessionId) => ({
        sessionId,
        pending: this.pending.size(sessionId),
        consecutiveFailures: this.consecutiveFailures.get(sessionId) ?? 0,
        hasSpooledMessages: this.spooledSessions.has(sessionId),
      })),
    };
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.replaySpool();
    if (this.config.dbRetryIntervalMs > 0) {
      this.retryTimer = setInterval(() => this.triggerRetry(), this.config.dbRetryIntervalMs);
      this.retryTimer.unref();
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.accepting = false;
    clearInterval(this.retryTimer);
    const inFlight = [...this.inFlight];
    await Promise.allSettled(inFlight);
    this.logger.log(`Shutting down: waited for ${inFlight.length} in-flight append(s)`);
    await this.retryRun;
    try {
      // One last try at the backlogs only: spool drains can wait for the next start.
      if (this.pending.total > 0) await this.flushBacklogsForShutdown();
    } finally {
      await this.spoolPendingForShutdown();
    }
  }

  private checkInputs(inputs: NewMessage[], fieldOf: (index: number) => string): void {
    const limit = this.config.maxMessageBytes;
    const seenClientIds = new Map<string, number>();
    inputs.forEach((input, index) => {
      // PostgreSQL cannot store U+0000 in a text column: an accepted message holding one could
      // never be written, and would stall its session (and the background retry) for good.
      for (const key of ['content', 'clientMessageId', 'toolName', 'toolCallId'] as const) {
        if (input[key]?.includes('\u0000')) {
          throw ScribeException.invalidInput(
            `${fieldOf(index)}.${key}`,
            'must not contain the NUL character (U+0000)',
          );
        }
      }
      const contentBytes = Buffer.byteLength(input.content, 'utf8');
      if (contentBytes > limit) {
        throw ScribeException.invalidInput(
          `${fieldOf(index)}.content`,
          `is ${contentBytes} bytes; the limit is ${limit} bytes (MAX_MESSAGE_BYTES)`,
        );
      }
      const totalBytes = contentBytes + jsonBytes(input.toolCalls) + jsonBytes(input.metadata);
      if (totalBytes > limit) {
        throw ScribeException.invalidInput(
          fieldOf(index),
          `content, toolCalls and metadata add up to ${totalBytes} bytes; the limit is ${limit} bytes (MAX_MESSAGE_BYTES)`,
        );
      }
      const clientId = input.clientMessageId;
      if (clientId) {
        if (seenClientIds.has(clientId)) {
          throw ScribeException.invalidInput(
            `${fieldOf(index)}.clientMessageId`,
            `repeats the clientMessageId of ${fieldOf(seenClientIds.get(clientId) ?? 0)}`,
          );
        }
        seenClientIds.set(clientId, index);
      }
    });
  }

  private async appendLocked(
    sessionId: string,
    inputs: NewMessage[],
    attempt = 1,
  ): Promise<AppendResult> {
    const stored = await this.findStoredRetries(sessionId, inputs);
    const results: { record: MessageRecord; queued: boolean }[] = [];
    const fresh: MessageRecord[] = [];
    for (const input of inputs) {
      const clientId = input.clientMessageId;
      const queued = clientId ? this.pending.findByClientMessageId(sessionId, clientId) : undefined;
      const previous = clientId ? stored.get(clientId) : undefined;
      if (queued) {
        results.push({ record: queued, queued: true });
      } else if (previous) {
        results.push({ record: previous, queued: false });
      } else {
        const record = this.accept(sessionId, input);
        fresh.push(record);
        results.push({ record, queued: false });
      }
    }
    if (fresh.length > 0) {
      const outcome = await this.storeOrQueue(sessionId, fresh, attempt === 1);
      // A retry of one of these messages was stored elsewhere meanwhile (another instance):
      // answer with what is stored, as for any retry.
      if (outcome === 'conflict') return this.appendLocked(sessionId, inputs, attempt + 1);
      const persisted = outcome === 'persisted';
      this.metrics.appendsTotal.inc({ status: persisted ? 'persisted' : 'queued' }, fresh.length);
      if (!persisted) {
        const freshIds = new Set(fresh.map((record) => record.id));
        for (const result of results) if (freshIds.has(result.record.id)) result.queued = true;
      }
    }
    const status = results.some((result) => result.queued)
      ? AppendStatus.QUEUED
      : AppendStatus.PERSISTED;
    return { records: results.map((result) => result.record), status };
  }

  /** Stored messages that earlier sends of these inputs created, by clientMessageId. */
  private async findStoredRetries(
    sessionId: string,
    inputs: NewMessage[],
  ): Promise<Map<string, MessageRecord>> {
    const clientIds = inputs.flatMap((input) =>
      input.clientMessageId ? [input.clientMessageId] : [],
    );
    // While the database is failing, a lookup would only wait out its timeout; the replay
    // skips anything stored already, so a duplicate cannot get in that way.
    if (clientIds.length === 0 || this.databaseFailing) return new Map();
    try {
      const found = await this.store.findByClientMessageIds(sessionId, clientIds);
      return new Map(found.map((record) => [record.clientMessageId as string, record]));
    } catch {
      return new Map();
    }
  }

  private accept(sessionId: string, input: NewMessage): MessageRecord {
    const { key, ms } = this.orderKeys.next();
    return {
      id: randomUUID(),
      sessionId,
      orderKey: key,
      role: input.role,
      content: input.content,
      clientMessageId: input.clientMessageId ?? null,
      toolName: input.toolName ?? null,
      toolCallId: input.toolCallId ?? null,
      toolCalls: input.toolCalls ?? null,
      metadata: input.metadata ?? null,
      acceptedAt: ms,
    };
  }

  /**
   * Writes or queues `records`; 'conflict' when the write broke a uniqueness constraint and
   * `mayConflict` lets the caller look again. Caller holds the lock.
   */
  private async storeOrQueue(
    sessionId: string,
    records: MessageRecord[],
    mayConflict: boolean,
  ): Promise<'persisted' | 'queued' | 'conflict'> {
    if (this.pending.size(sessionId) > 0) {
      // Nothing newer is stored before older pending messages: join the tail and flush; the cap
      // applies only to what the database did not take.
      this.pending.push(sessionId, records);
      if (await this.flushBacklogLocked(sessionId)) {
        if (this.spooledSessions.has(sessionId)) await this.drainSpoolLocked(sessionId);
        return 'persisted';
      }
      await this.evictPastCap(sessionId);
      return 'queued';
    }
    const outcome = await this.attemptWrite({ sessionId, records });
    if (outcome === 'stored') {
      if (this.spooledSessions.has(sessionId)) await this.drainSpoolLocked(sessionId);
      return 'persisted';
    }
    if (outcome === 'conflict' && mayConflict) return 'conflict';
    // Queued messages are written with skipExisting, so one stored meanwhile is not doubled.
    await this.enqueue(sessionId, records);
    return 'queued';
  }

  /**
   * One write attempt. While the database is known to be failing only one attempt at a time
   * goes to it (the probe); the others report failure at once instead of each waiting out
   * a database timeout. With the background retry on, it alone probes, so that no append
   * waits out a timeout while it holds its session's lock.
   */
  private async attemptWrite(write: SessionWrite): Promise<'stored' | 'failed' | 'conflict'> {
    let probe = false;
    if (this.databaseFailing) {
      if (this.probeInFlight || this.config.dbRetryIntervalMs > 0) {
        this.noteWriteFailure(write, undefined);
        return 'failed';
      }
      this.probeInFlight = probe = true;
    }
    let result: WriteResult;
    try {
      result = await this.writer.submit(write);
    } catch (error) {
      this.events.emit(WriteFailed.event, new WriteFailed(write.sessionId));
      // A broken uniqueness constraint is about these rows, not an outage of the database.
      if (isConstraintViolation(error)) {
        this.logger.warn(
          `Write for session ${write.sessionId} conflicts with a stored message: ${describeDatabaseError(error)}`,
        );
        return 'conflict';
      }
      this.noteWriteFailure(write, error);
      return 'failed';
    } finally {
      if (probe) this.probeInFlight = false;
    }
    this.consecutiveFailures.delete(write.sessionId);
    if (this.databaseFailing) {
      this.databaseFailing = false;
      this.logger.log(
        `Database writable again; flushing ${this.pending.total} pending message(s) in the background`,
      );
      this.triggerRetry();
    }
    if (result.revision !== null) {
      this.events.emit(
        MessagesStored.event,
        new MessagesStored(write.sessionId, result.stored, result.revision),
      );
    }
    return 'stored';
  }

  /**
   * A failed write, or one not even tried because the database is known to be failing (then
   * `error` is undefined and the last error is reported). Either way it counts for the session,
   * so that a long outage gets loud: WARN at first, ERROR from the third failure on.
   */
  private noteWriteFailure(write: SessionWrite, error: unknown): void {
    this.databaseFailing = true;
    if (error !== undefined) {
      this.lastDatabaseError = { message: describeDatabaseError(error), at: Date.now() };
      this.metrics.dbWriteFailures.inc();
    }
    const failures = (this.consecutiveFailures.get(write.sessionId) ?? 0) + 1;
    this.consecutiveFailures.set(write.sessionId, failures);
    const alreadyQueued = write.skipExisting ? 0 : write.records.length;
    const line =
      `Database write for session ${write.sessionId} ${error === undefined ? 'not tried, the database is failing' : 'failed'} ` +
      `(${failures} consecutive failure(s), ${this.pending.size(write.sessionId) + alreadyQueued} pending): ` +
      (this.lastDatabaseError?.message ?? 'unknown error');
    if (failures >= LOUD_FAILURE_COUNT) this.logger.error(line);
    else this.logger.warn(line);
  }

  /** Queues at the tail; past the cap evicts the oldest to the spool. */
  private async enqueue(sessionId: string, records: MessageRecord[]): Promise<void> {
    this.pending.push(sessionId, records);
    await this.evictPastCap(sessionId);
  }

  /** Past the cap, moves the session's oldest queued messages to the spool. */
  private async evictPastCap(sessionId: string): Promise<void> {
    const overflow = this.pending.size(sessionId) - this.config.maxPendingPerSession;
    if (overflow <= 0) return;
    for (const record of this.pending.shift(sessionId, overflow)) await this.evict(record);
  }

  private async evict(record: MessageRecord): Promise<void> {
    const cap = this.config.maxPendingPerSession;
    try {
      await this.spool.write(record, SPOOL_REASON_CAP_DROP);
      this.spooledSessions.add(record.sessionId);
      this.logger.warn(
        `Pending cap of ${cap} reached for session ${record.sessionId}: spooled oldest message ${record.id} to ${this.spool.path}`,
      );
    } catch (error) {
      this.metrics.messagesDropped.inc();
      this.logger.warn(
        `Pending cap of ${cap} reached for session ${record.sessionId} and the on-disk spool unavailable at ${this.spool.path} ` +
          `(${describeDatabaseError(error)}): dropped oldest message ${record.id}`,
      );
    }
  }

  /** Writes the session's backlog oldest first, then its spooled drops. Caller holds the lock. */
  private async flushLocked(sessionId: string): Promise<boolean> {
    if (!(await this.flushBacklogLocked(sessionId))) return false;
    return this.spooledSessions.has(sessionId) ? this.drainSpoolLocked(sessionId) : true;
  }

  /** Writes the session's queued messages oldest first; true once none is left. */
  private async flushBacklogLocked(sessionId: string): Promise<boolean> {
    while (this.pending.size(sessionId) > 0) {
      const chunk = this.pending.peek(sessionId, FLUSH_CHUNK);
      if (
        (await this.attemptWrite({ sessionId, records: chunk, skipExisting: true })) !== 'stored'
      ) {
        return false;
      }
      this.pending.shift(sessionId, chunk.length);
    }
    return true;
  }

  /** Replays the session's spool files in drop order; keeps the rest on the first failure. */
  private async drainSpoolLocked(sessionId: string, entries?: SpoolEntry[]): Promise<boolean> {
    try {
      const result = await this.spool.drainSession(
        sessionId,
        async (records) => {
          if ((await this.attemptWrite({ sessionId, records, skipExisting: true })) !== 'stored') {
            throw new Error(this.lastDatabaseError?.message ?? 'database write failed');
          }
        },
        FLUSH_CHUNK,
        entries,
      );
      if (result.remaining === 0 && result.error === undefined) {
        this.spooledSessions.delete(sessionId);
        return true;
      }
    } catch (error) {
      this.logger.warn(
        `Could not drain the spool for session ${sessionId}: ${describeDatabaseError(error)}`,
      );
    }
    this.spooledSessions.add(sessionId);
    return false;
  }

  private triggerRetry(): void {
    if (this.retryRun || (this.pending.total === 0 && this.spooledSessions.size === 0)) return;
    this.retryRun = this.retryAll()
      .catch((error: unknown) => this.logger.error(`Background flush failed: ${String(error)}`))
      .finally(() => {
        this.retryRun = null;
      });
  }

  /** Flushes every session with pending or spooled messages; stops while the database fails. */
  private async retryAll(): Promise<void> {
    // Probe without holding any session's lock: a probe can take a whole database timeout,
    // and appends to that session must not wait it out.
    if (this.databaseFailing && !(await this.probeOutsideLocks())) return;
    const sessionIds = new Set([...this.pending.sessions(), ...this.spooledSessions]);
    for (const sessionId of sessionIds) {
      const flushed = await this.locks.runExclusive(sessionId, () => this.flushLocked(sessionId));
      if (!flushed && this.databaseFailing) return;
    }
  }

  private async flushBacklogsForShutdown(): Promise<void> {
    if (this.databaseFailing && !(await this.probeOutsideLocks())) return;
    for (const sessionId of this.pending.sessions()) {
      const flushed = await this.locks.runExclusive(sessionId, () =>
        this.flushBacklogLocked(sessionId),
      );
      if (!flushed && this.databaseFailing) return;
    }
  }

  /** The background retry's probe: true when the database took a write transaction again. */
  private async probeOutsideLocks(): Promise<boolean> {
    if (this.probeInFlight) return false;
    this.probeInFlight = true;
    try {
      await this.writer.probe();
    } catch (error) {
      this.lastDatabaseError = { message: describeDatabaseError(error), at: Date.now() };
      this.metrics.dbWriteFailures.inc();
      this.reportOngoingOutage();
      return false;
    } finally {
      this.probeInFlight = false;
    }
    this.databaseFailing = false;
    this.logger.log(
      `Database writable again; flushing ${this.pending.total} pending message(s) of ${this.pending.sessions().length} session(s)`,
    );
    return true;
  }

  // A quiet outage (no appends, so no failing writes to log) still says so once a minute.
  private reportOngoingOutage(): void {
    const now = Date.now();
    if (now - this.lastOutageReport < OUTAGE_REPORT_INTERVAL_MS) return;
    this.lastOutageReport = now;
    this.logger.error(
      `Database still not writable (${this.lastDatabaseError?.message}); ${this.pending.total} message(s) pending in memory, ` +
        `${this.spooledSessions.size} session(s) with spooled messages`,
    );
  }

  /** At start: every owned spool file is replayed, per session, in drop order. */
  private async replaySpool(): Promise<void> {
    const bySession = new Map<string, SpoolEntry[]>();
    try {
      for (const entry of await this.spool.listOwned()) {
        const entries = bySession.get(entry.sessionId);
        if (entries) entries.push(entry);
        else bySession.set(entry.sessionId, [entry]);
      }
    } catch (error) {
      this.logger.warn(`Could not read the spool at ${this.spool.path}: ${String(error)}`);
      return;
    }
    if (bySession.size === 0) return;
    const failed: string[] = [];
    for (const [sessionId, entries] of bySession) {
      const drained = await this.locks.runExclusive(sessionId, () =>
        this.drainSpoolLocked(sessionId, entries),
      );
      if (!drained) failed.push(sessionId);
    }
    const messages = [...bySession.values()].reduce((sum, entries) => sum + entries.length, 0);
    if (failed.length > 0) {
      this.logger.warn(
        `Boot replay left spooled messages of ${failed.length} session(s) in ${this.spool.path}; ` +
          `each is drained on its next successful write or by the background retry`,
      );
    } else {
      this.logger.log(
        `Boot replay stored ${messages} spooled message(s) of ${bySession.size} session(s)`,
      );
    }
  }

  private async spoolPendingForShutdown(): Promise<void> {
    if (this.pending.total === 0) return;
    let spooled = 0;
    let lost = 0;
    for (const sessionId of this.pending.sessions()) {
      for (const record of this.pending.shift(sessionId, this.pending.size(sessionId))) {
        try {
          await this.spool.write(record, SPOOL_REASON_SHUTDOWN);
          spooled += 1;
        } catch (error) {
          lost += 1;
          this.metrics.messagesDropped.inc();
          this.logger.error(
            `on-disk spool unavailable at ${this.spool.path} during shutdown (${String(error)}): lost message ${record.id} of session ${sessionId}`,
          );
        }
      }
    }
    const summary = `Shutdown: spooled ${spooled} pending message(s) to ${this.spool.path}`;
    if (lost > 0) this.logger.error(`${summary}; ${lost} could not be spooled and are lost`);
    else this.logger.log(summary);
  }
}

function jsonBytes(value: unknown): number {
  return value === undefined || value === null
    ? 0
    : Buffer.byteLength(JSON.stringify(value), 'utf8');
}
