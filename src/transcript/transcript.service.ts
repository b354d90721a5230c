import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { AppendIntake } from '../common/lifecycle/append-intake.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { DatabaseHealth } from '../database/database-health.js';
import { toMessageModel } from '../common/graphql/message.mapper.js';
import { messageIdFor } from '../message/message-id.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { JournalIndex } from '../spool/journal-index.js';
import { SpoolService } from '../spool/spool.service.js';
import { AppendStatus, weakestStatus } from '../message/append-status.js';
import { DurableWriter } from './durable-writer.js';
import { refuseChangedRetries } from './idempotency.js';
import { checkAppendTarget, checkNewMessages } from './input-rules.js';
import { plainMessagesOf } from './message-shapes.js';
import { type AppendMessagesPayload } from './models/append-payload.model.js';
import { type PendingStatus } from './models/pending-status.model.js';
import { type MessageInput } from './dto/message.input.js';
import { TranscriptRecovery } from './recovery.js';
import { RetryLookup, type Answer } from './retry-lookup.js';
import { SessionBacklog, type Backlog } from './session-backlog.js';
import {
  TranscriptImporter,
  type ImportAnswer,
  type ImportedMessage,
} from './transcript-importer.js';

// Where appendMessages' input puts the batch, and each of its messages: errors name them so.
const BATCH_FIELD = 'input.messages';
const batchFieldOf = (index: number): string => `${BATCH_FIELD}.${index}`;

export interface AppendResult {
  records: MessageRecord[];
  status: AppendStatus;
}

/**
 * The write API: refuses appends while shutting down and input it cannot store faithfully,
 * answers a retried client id with what its first acceptance got, gives each new message its
 * id and place under the session's lock, and hands it to the durable writer.
 */
@Injectable()
export class TranscriptService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(TranscriptService.name);
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly backlog: SessionBacklog,
    private readonly durable: DurableWriter,
    private readonly recovery: TranscriptRecovery,
    private readonly health: DatabaseHealth,
    private readonly spool: SpoolService,
    private readonly index: JournalIndex,
    private readonly retries: RetryLookup,
    private readonly config: ScribeConfig,
    private readonly metrics: MetricsService,
    private readonly orderKeys: OrderKeyGenerator,
    private readonly importer: TranscriptImporter,
    private readonly intake: AppendIntake,
  ) {
    metrics.observeGauge('scribe_pending_messages', () => backlog.total);
    metrics.observeGauge('scribe_database_up', () => (health.status().up ? 1 : 0));
    metrics.observeGauge('scribe_appends_in_flight', () => this.inFlight.size);
  }

  /**
   * The write API for a host that embeds Scribe: appends `messages` (as the appendMessages
   * mutation takes them, without their session) to `sessionId`, creating the session if it is
   * new. The same checks, errors (ScribeException, the same codes and fields) and path as
   * appendMessages, whose resolver calls appendRecords once GraphQL has checked the input's
   * types; here class-validator checks them against the same DTO. The status is the weakest
   * promise among the messages (PERSISTED, QUEUED or BUFFERED, as the mutation answers).
   */
  async append(
    sessionId: string,
    messages: readonly MessageInput[],
  ): Promise<AppendMessagesPayload> {
    // Copies, read once: a host's getter cannot answer the checks one value and the store another.
    const inputs = plainMessagesOf(
      sessionId,
      messages,
      batchFieldOf,
      BATCH_FIELD,
      this.config.maxMessageBytes,
    );
    const { records, status } = await this.appendRecords(sessionId, inputs, batchFieldOf);
    return { messages: records.map((record) => toMessageModel(record, status)), status };
  }

  /**
   * Accepts `inputs` for `sessionId`, in order. `fieldOf(i)` names input i in errors.
   * Re-sent messages (same clientMessageId) come back as their first acceptance got them.
   * The resolvers' entry, for inputs GraphQL has checked and built: a host calls append(),
   * which copies and checks what it is given first.
   * @internal
   */
  async appendRecords(
    sessionId: string,
    inputs: readonly NewMessage[],
    fieldOf: (index: number) => string = (index) => `messages.${index}`,
  ): Promise<AppendResult> {
    if (!this.intake.isAccepting) {
      throw new ScribeException(
        ScribeErrorCode.ServiceUnavailable,
        'This instance is shutting down and did not accept the append; retry it.',
      );
    }
    checkAppendTarget(sessionId, inputs.length, BATCH_FIELD);
    checkNewMessages(inputs, this.config.maxMessageBytes, fieldOf);
    // Timed from here: the input is checked, and the wait for the session's lock counts.
    const timer = this.metrics.appendDuration.startTimer();
    const task = this.backlog.withSession(sessionId, (backlog) =>
      this.appendLocked(backlog, inputs, fieldOf),
    );
    this.inFlight.add(task);
    try {
      const result = await task;
      timer({ status: result.status.toLowerCase() });
      return result;
    } catch (error) {
      timer({ status: 'failed' });
      throw error;
    } finally {
      this.inFlight.delete(task);
    }
  }

  /**
   * Imports `messages` (ids and times kept) into `sessionId` through the same path, lock and
   * statuses as an append: see TranscriptImporter. `fieldOf(i)` names message i in errors.
   * The import's HTTP route parses and checks each line's types before it calls this.
   */
  async importRecords(
    sessionId: string,
    messages: readonly ImportedMessage[],
    fieldOf: (index: number) => string,
    batchField: string,
  ): Promise<ImportAnswer[]> {
    if (!this.intake.isAccepting) {
      throw new ScribeException(
        ScribeErrorCode.ServiceUnavailable,
        'This instance is shutting down and did not accept the import; retry it.',
      );
    }
    checkAppendTarget(sessionId, messages.length, batchField);
    checkNewMessages(messages, this.config.maxMessageBytes, fieldOf);
    const task = this.backlog.withSession(sessionId, (backlog) =>
      this.importer.importLocked(backlog, messages, fieldOf),
    );
    this.inFlight.add(task);
    try {
      return await task;
    } finally {
      this.inFlight.delete(task);
    }
  }

  /**
   * False once shutdown has begun: appends are refused from then on. AppendIntake's answer, for
   * a host that holds this service; Scribe's probes read AppendIntake itself.
   */
  get isAccepting(): boolean {
    return this.intake.isAccepting;
  }

  /** The pendingStatus query's answer: what this instance holds back, and the database's state. */
  pendingStatus(): PendingStatus {
    const { writable, lastError, lastErrorAt, consecutiveFailures } = this.health.status();
    const sessionIds = new Set([
      ...this.backlog.sessions(),
      ...this.index.sessionsWithJournalOnly(),
      ...consecutiveFailures.keys(),
    ]);
    return {
      databaseWritable: writable,
      lastDatabaseError: lastError,
      lastDatabaseErrorAt: lastErrorAt === null ? null : new Date(lastErrorAt),
      totalPending: this.backlog.total,
      sessions: [...sessionIds].sort().map((sessionId) => ({
        sessionId,
        pending: this.backlog.size(sessionId),
        consecutiveFailures: consecutiveFailures.get(sessionId) ?? 0,
        hasSpooledMessages: this.index.hasJournalOnly(sessionId),
      })),
    };
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.intake.close();
    const inFlight = [...this.inFlight];
    await Promise.allSettled(inFlight);
    this.logger.log(`Shutting down: waited for ${inFlight.length} in-flight append(s)`);
    await this.recovery.shutdown();
  }

  private async appendLocked(
    backlog: Backlog,
    inputs: readonly NewMessage[],
    fieldOf: (index: number) => string,
  ): Promise<AppendResult> {
    const retried = inputs.flatMap((input) =>
      input.clientMessageId ? [messageIdFor(backlog.sessionId, input.clientMessageId)] : [],
    );
    await this.durable.journalRetried(backlog, this.retries.held(backlog, retried));
    const earlier = await this.retries.earlierAnswers(backlog, inputs);
    refuseChangedRetries(inputs, earlier, fieldOf);
    const answers: Answer[] = [];
    const fresh: MessageRecord[] = [];
    for (const input of inputs) {
      const found = input.clientMessageId ? earlier.get(input.clientMessageId) : undefined;
      if (found) {
        answers.push(found);
      } else {
        const record = this.accept(backlog.sessionId, input);
        fresh.push(record);
        answers.push({ record, status: AppendStatus.PERSISTED });
      }
    }
    if (fresh.length > 0) {
      const outcome = await this.durable.accept(backlog, fresh);
      if (outcome.kind === 'refused') {
        throw new ScribeException(
          ScribeErrorCode.MessageRefused,
          `The database refused the message(s), and nothing was stored: ${outcome.reason}`,
        );
      }
      // Another acceptance of some of these client ids was stored first (another instance, or
      // a lookup that failed): answer those with what is stored, as for any retry. The others
      // were stored now, and must not be accepted a second time.
      const skipped = new Set(outcome.skipped.map((r) => r.id));
      if (skipped.size > 0)
        await this.retries.answerWithStored(backlog.sessionId, answers, skipped);
      const { status } = outcome;
      const accepted = new Set(fresh);
      for (const answer of answers) if (accepted.has(answer.record)) answer.status = status;
      this.metrics.appendsTotal.inc(
        { status: status.toLowerCase() },
        fresh.filter((record) => !skipped.has(record.id)).length,
      );
    }
    return {
      records: answers.map((answer) => answer.record),
      status: weakestStatus(answers.map((answer) => answer.status)),
    };
  }

  private accept(sessionId: string, input: NewMessage): MessageRecord {
    const { key, ms } = this.orderKeys.next();
    return {
      id: messageIdFor(sessionId, input.clientMessageId),
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
}
