import { Injectable } from '@nestjs/common';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { SessionQueries } from '../database/session-queries.js';
import { messageIdFor } from '../message/message-id.js';
import {
  changesCarried,
  type MessageChanges,
  type MessageRecord,
  type NewMessage,
} from '../message/message-record.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { AppendStatus } from '../message/append-status.js';
import { DurableWriter } from './durable-writer.js';
import { differingIn } from './idempotency.js';
import { RetryLookup, type Answer } from './retry-lookup.js';
import { type Backlog } from './session-backlog.js';

/** A message as an import gives it: what an append sends, its id, and when it was written. */
export interface ImportedMessage extends NewMessage, Partial<MessageChanges> {
  id: string;
  /** Epoch milliseconds: the time it was written where it came from, kept as its createdAt. */
  createdAt: number;
}

/** What one imported message came to: its status, and whether this import accepted it. */
export interface ImportAnswer {
  status: AppendStatus;
  /** False when the message was held or stored already (an import of it before). */
  accepted: boolean;
}

/**
 * A batch stored but for the messages whose id was stored meanwhile as another session's
 * message: refused by the first one's line, with the answers of every other message of the
 * batch, before it and after it, for they were stored (or held) all the same.
 */
export class PartlyImported extends ScribeException {
  constructor(
    field: string,
    message: string,
    readonly stored: ImportAnswer[],
  ) {
    super(ScribeErrorCode.IdempotencyConflict, `${field}: ${message}`, field);
  }
}

// A UUID as Scribe stores ids (lower-case hex; RFC 9562's layout), with its version digit.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The import's rule for an id: a message with a clientMessageId has the id Scribe derives from
 * its session and that client id, as its append gave it, and one without has a UUID of any
 * version but 5. Why: a v5 id is a derived one, which another message (another session's
 * retry, or this session's next append of that client id) will be given; an import that took it
 * first would make that append's answer another message.
 */
export function importedIdProblem(sessionId: string, message: ImportedMessage): string | undefined {
  const match = UUID.exec(message.id);
  if (!match) return 'must be a UUID in lower case';
  const clientId = message.clientMessageId;
  if (clientId !== null && clientId !== undefined) {
    return message.id === messageIdFor(sessionId, clientId)
      ? undefined
      : 'is not the id this session gives its clientMessageId (import into the session it was exported from)';
  }
  return match[1] === '5'
    ? 'is a name-based UUID (version 5), which Scribe derives from client ids: a message without a clientMessageId needs another'
    : undefined;
}

/**
 * Imports: messages that keep the id and time they were given, stored through the write path
 * as an append is (the session's lock, the journal's ordering and durability, the same
 * statuses). Idempotent by id: a message held or stored already is answered as it is, and one
 * with the same id but other content is refused. Each is placed after what the session holds,
 * in the order given, with a key of this instance's clock: its createdAt is shown, never used
 * to order, stamp or floor anything (see MessageRecord.createdAt).
 */
@Injectable()
export class TranscriptImporter {
  constructor(
    private readonly durable: DurableWriter,
    private readonly retries: RetryLookup,
    private readonly queries: SessionQueries,
    private readonly orderKeys: OrderKeyGenerator,
    private readonly metrics: MetricsService,
  ) {}

  /** Imports `messages` into the locked session's transcript; `fieldOf(i)` names one in errors. */
  async importLocked(
    backlog: Backlog,
    messages: readonly ImportedMessage[],
    fieldOf: (index: number) => string,
  ): Promise<ImportAnswer[]> {
    const seen = new Map<string, number>();
    messages.forEach((message, index) => {
      const problem = importedIdProblem(backlog.sessionId, message);
      if (problem) throw ScribeException.invalidInput(`${fieldOf(index)}.id`, problem);
      const earlier = seen.get(message.id);
      if (earlier !== undefined) {
        throw ScribeException.invalidInput(
          `${fieldOf(index)}.id`,
          `repeats the id of ${fieldOf(earlier)}`,
        );
      }
      seen.set(message.id, index);
    });
    const ids = messages.map((message) => message.id);
    await this.durable.journalRetried(backlog, this.retries.held(backlog, ids));
    const { answers, elsewhere } = await this.retries.earlierByIds(backlog, ids);
    // Refused before anything is accepted: the batch changes nothing.
    messages.forEach((message, index) => {
      if (elsewhere.has(message.id)) {
        throw conflict(fieldOf(index), `its id is another session's message; ${NOTHING}`);
      }
      const found = answers.get(message.id);
      const field = found && differingField(message, found.record);
      if (field) {
        throw conflict(
          fieldOf(index),
          `its id was stored or held before with another ${field}; ${NOTHING}`,
        );
      }
    });
    const fresh: MessageRecord[] = [];
    const results: (Answer & { accepted: boolean })[] = messages.map((message) => {
      const found = answers.get(message.id);
      if (found) return { ...found, accepted: false };
      const record = this.recordOf(backlog.sessionId, message);
      fresh.push(record);
      return { record, status: AppendStatus.PERSISTED, accepted: true };
    });
    if (fresh.length > 0) await this.store(backlog, fresh, results, fieldOf);
    return results.map(({ status, accepted }) => ({ status, accepted }));
  }

  private async store(
    backlog: Backlog,
    fresh: MessageRecord[],
    results: (Answer & { accepted: boolean })[],
    fieldOf: (index: number) => string,
  ): Promise<void> {
    const outcome = await this.durable.accept(backlog, fresh);
    if (outcome.kind === 'refused') {
      throw new ScribeException(
        ScribeErrorCode.MessageRefused,
        `The database refused the message(s), and nothing of this batch was stored: ${outcome.reason}`,
      );
    }
    const { status, skipped } = outcome;
    // Stored meanwhile by another import of the same messages (or another instance's): they
    // are this import's only if stored in this session, as they are.
    const skippedIds = new Set(skipped.map((record) => record.id));
    const mine = await this.storedHere(backlog.sessionId, skippedIds);
    const accepted = new Set(fresh);
    for (const result of results) {
      if (!accepted.has(result.record)) continue;
      result.status = status;
      if (skippedIds.has(result.record.id)) result.accepted = false;
    }
    this.metrics.appendsTotal.inc({ status: status.toLowerCase() }, fresh.length - skipped.length);
    const isLost = ({ record }: Answer) => skippedIds.has(record.id) && !mine.has(record.id);
    const lost = results.findIndex(isLost);
    if (lost !== -1) {
      const storedNow = fresh.length - skipped.length;
      throw new PartlyImported(
        fieldOf(lost),
        `its id was stored meanwhile as another session's message; ${storedNow} other message(s) of its batch were stored now, counted in imported`,
        results
          .filter((result) => !isLost(result))
          .map(({ status: kept, accepted: taken }) => ({ status: kept, accepted: taken })),
      );
    }
  }

  /** Which of `ids` are stored in this session; all of them when the database cannot say. */
  private async storedHere(sessionId: string, ids: Set<string>): Promise<Set<string>> {
    if (ids.size === 0) return ids;
    try {
      const stored = await this.queries.findByIds([...ids]);
      return new Set(
        stored.filter((record) => record.sessionId === sessionId).map((record) => record.id),
      );
    } catch {
      // Skipped by this session's write for a stored id: this import's, as far as can be told.
      return ids;
    }
  }

  private recordOf(sessionId: string, message: ImportedMessage): MessageRecord {
    const { key, ms } = this.orderKeys.next();
    return {
      id: message.id,
      sessionId,
      orderKey: key,
      role: message.role,
      content: message.content,
      clientMessageId: message.clientMessageId ?? null,
      toolName: message.toolName ?? null,
      toolCallId: message.toolCallId ?? null,
      toolCalls: message.toolCalls ?? null,
      metadata: message.metadata ?? null,
      acceptedAt: ms,
      createdAt: message.createdAt,
      // Edited or redacted where it came from: stored as that left it, with no commit number
      // of the change here (it is part of its append).
      ...changesCarried(message),
    };
  }
}

const NOTHING = 'nothing of this batch was imported';

/** Where an import's message differs from the one held or stored with its id. */
function differingField(message: ImportedMessage, stored: MessageRecord): string | undefined {
  // A file that says more happened to the message than the store knows (a later edit, a
  // redaction) must not count as existing: what it says was not stored. An older state of a
  // message changed here since is the same message, and the store's state stands.
  const fileRevision = message.revision ?? 1;
  const storedRevision = stored.revision ?? 1;
  if (fileRevision > storedRevision) return 'revision';
  const field = differingIn(fileRevision === storedRevision ? 'all' : 'kept', message, stored);
  if (field) return field;
  if ((message.clientMessageId ?? null) !== stored.clientMessageId) return 'clientMessageId';
  return message.createdAt === (stored.createdAt ?? stored.acceptedAt) ? undefined : 'createdAt';
}

function conflict(field: string, said: string): ScribeException {
  return new ScribeException(ScribeErrorCode.IdempotencyConflict, `${field}: ${said}`, field);
}
