import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { jsonBytes } from '../common/validation/storable-values.js';
import { type MessageRecord } from '../message/message-record.js';
import { CHANGES_CHANNEL, NOTIFY_SQL, changeNotice } from './commit-notices.js';
import { DatabaseReadiness } from './database-readiness.js';
import { OwnTransactions } from './own-transactions.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { messageRecordFromEntity } from './record-mappers.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/** What an edit sets: a field left undefined stays as it is. */
export interface MessageEdit {
  content?: string;
  metadata?: unknown;
}

/**
 * How a change ended: made (the message as it now reads, and the session's revision); no such
 * stored message in that session; its revision was not the one expected; or it is redacted
 * (an edit of it is refused; a second redaction changes nothing). The last two carry the
 * message as it reads.
 */
export type MessageChange =
  | { kind: 'changed'; record: MessageRecord; sessionRevision: number }
  | TooLarge
  | { kind: 'not-found' }
  | { kind: 'conflict'; record: MessageRecord }
  | { kind: 'redacted'; record: MessageRecord };

/** An edit that would leave the message past MAX_MESSAGE_BYTES, with what it would weigh. */
export type TooLarge = { kind: 'too-large'; bytes: number };

/** How often the write-ahead log is tried again while a reader holds it (see emptyLog). */
const LOG_RETRY_MS = 1000;

/** Thrown inside the transaction to undo it when the message was not changed. */
class Unchanged extends Error {}

/**
 * Edits and redactions of stored messages, in place. Each takes the next commit number of the
 * session's commit order under the session's row lock (the same order appends take theirs
 * in, see countMessages), so that a live reader meets it in commit order, and on PostgreSQL
 * tells the other instances in the same transaction (NOTIFY is delivered only if it commits).
 */
@Injectable()
export class MessageChanges implements OnApplicationShutdown {
  private readonly logger = new Logger('Redaction');
  private logRetry: NodeJS.Timeout | undefined;
  private logWaiting = false;

  constructor(
    @InjectDataSource(SCRIBE_CONNECTION) private readonly dataSource: DataSource,
    private readonly readiness: DatabaseReadiness,
    private readonly transactions: OwnTransactions,
  ) {}

  /** The stored message `id` of `sessionId`, as it now reads. */
  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    this.readiness.assertReady();
    const entity = await this.dataSource.getRepository(MessageEntity).findOneBy({ id, sessionId });
    return entity ? messageRecordFromEntity(entity) : undefined;
  }

  /**
   * Sets the message's content and/or metadata, while its revision is `expectedRevision`, and
   * while the message it leaves (content, tool calls and metadata together) fits `maxBytes`.
   */
  edit(
    sessionId: string,
    id: string,
    edit: MessageEdit,
    expectedRevision: number | undefined,
    at: number,
    maxBytes: number,
  ): Promise<MessageChange> {
    return this.change(sessionId, id, expectedRevision, (current) => {
      const bytes =
        Buffer.byteLength(edit.content ?? current.content, 'utf8') +
        jsonBytes(current.toolCalls) +
        jsonBytes(edit.metadata !== undefined ? edit.metadata : current.metadata);
      if (bytes > maxBytes) return { kind: 'too-large', bytes };
      return {
        ...(edit.content !== undefined ? { content: edit.content } : {}),
        ...(edit.metadata !== undefined ? { metadata: jsonOrNull(edit.metadata) } : {}),
        editedAt: at,
      };
    });
  }

  /**
   * Removes the message's content, metadata and tool calls for good, leaving its role, times
   * and place, the time of the redaction and `reason`. The rows of the search index go with
   * the content (the message-search migration's triggers); on SQLite what the row held is
   * zeroed (see OwnTransactions), and the write-ahead log emptied (see emptyLog).
   */
  async redact(sessionId: string, id: string, reason: string, at: number): Promise<MessageChange> {
    const change = await this.change(sessionId, id, undefined, () => ({
      content: '',
      metadata: null,
      toolCalls: null,
      redactedAt: at,
      redactionReason: reason,
    }));
    if (change.kind === 'changed') await this.emptyLog();
    return change;
  }

  onApplicationShutdown(): void {
    clearTimeout(this.logRetry);
  }

  /**
   * Empties SQLite's write-ahead log, whose frames still hold the pages a redaction changed;
   * while a reader's snapshot needs them (a long read, a backup tool), tries again every
   * LOG_RETRY_MS, saying so once, until it can.
   */
  private async emptyLog(): Promise<void> {
    clearTimeout(this.logRetry);
    this.logRetry = undefined;
    if (await this.transactions.emptyWriteAheadLog().catch(() => false)) {
      if (this.logWaiting) this.logger.log('The write-ahead log is emptied of redacted pages');
      this.logWaiting = false;
      return;
    }
    if (!this.logWaiting) {
      this.logger.warn(
        `A reader holds the write-ahead log, which keeps a redacted message's old pages until it is emptied; trying every ${LOG_RETRY_MS} ms`,
      );
    }
    this.logWaiting = true;
    this.logRetry = setTimeout(() => void this.emptyLog(), LOG_RETRY_MS);
    this.logRetry.unref();
  }

  /**
   * Changes the message under its session's row lock: `changesOf` says what to set, from the
   * message as it is under the lock, or refuses (too large). Not changed: why, from the message
   * as it then reads.
   */
  private async change(
    sessionId: string,
    id: string,
    expectedRevision: number | undefined,
    changesOf: (current: MessageEntity) => Partial<MessageEntity> | TooLarge,
  ): Promise<MessageChange> {
    this.readiness.assertReady();
    let refused: TooLarge | undefined;
    try {
      return await this.transactions.run(async (manager) => {
        // The session's row first, as an append takes it (SQLite's transaction holds the
        // write lock from its BEGIN): commit numbers are handed out under it, and every change
        // of the session's messages waits for the one before. Nothing is written until the
        // change is known to be made, so a refused one undoes nothing a reader may have seen
        // (on SQLite other requests read on this same connection, inside this transaction).
        if (this.dataSource.options.type === 'postgres') {
          await manager.query(`SELECT 1 FROM "sessions" WHERE "id" = $1 FOR UPDATE`, [sessionId]);
        }
        const current = await manager.findOneBy(MessageEntity, { id, sessionId });
        const revision = current?.revision ?? 1;
        if (!current || current.redactedAt !== null) throw new Unchanged();
        if (expectedRevision !== undefined && revision !== expectedRevision) {
          throw new Unchanged();
        }
        const set = changesOf(current);
        if ('kind' in set) {
          refused = set;
          throw new Unchanged();
        }
        await manager
          .createQueryBuilder()
          .update(SessionEntity)
          .set({ revision: () => '"revision" + 1' })
          .where('id = :sessionId', { sessionId })
          .execute();
        const session = await manager.findOneByOrFail(SessionEntity, { id: sessionId });
        const seq = session.revision;
        await manager
          .createQueryBuilder()
          .update(MessageEntity)
          .set({ ...set, revision: revision + 1, changeSeq: seq })
          .where('id = :id', { id })
          .execute();
        await this.notify(manager, sessionId, id, seq);
        const entity = await manager.findOneByOrFail(MessageEntity, { id });
        return { kind: 'changed', record: messageRecordFromEntity(entity), sessionRevision: seq };
      });
    } catch (error) {
      if (!(error instanceof Unchanged)) throw error;
    }
    if (refused) return refused;
    // Nothing was changed: say why, from the message as it reads now.
    const record = await this.find(sessionId, id);
    if (!record) return { kind: 'not-found' };
    if (record.redactedAt != null) return { kind: 'redacted', record };
    return { kind: 'conflict', record };
  }

  /** Other instances' live readers hear of the change (see commit-notices.ts); PostgreSQL only. */
  private async notify(
    manager: EntityManager,
    sessionId: string,
    id: string,
    seq: number,
  ): Promise<void> {
    if (this.dataSource.options.type === 'postgres') {
      await manager.query(NOTIFY_SQL, [CHANGES_CHANNEL, changeNotice(sessionId, id, seq)]);
    }
  }
}

/** JSON text or NULL, as the `simple-json` column holds it. */
function jsonOrNull(value: unknown): MessageEntity['metadata'] {
  return value === null ? null : (value as MessageEntity['metadata']);
}
