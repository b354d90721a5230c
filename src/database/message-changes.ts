import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
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
  | { kind: 'not-found' }
  | { kind: 'conflict'; record: MessageRecord }
  | { kind: 'redacted'; record: MessageRecord };

/** Thrown inside the transaction to undo it when the message was not changed. */
class Unchanged extends Error {}

/**
 * Edits and redactions of stored messages, in place. Each takes the next commit number of the
 * session's commit order under the session's row lock (the same order appends take theirs
 * in, see countMessages), so that a live reader meets it in commit order, and on PostgreSQL
 * tells the other instances in the same transaction (NOTIFY is delivered only if it commits).
 */
@Injectable()
export class MessageChanges {
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

  /** Sets the message's content and/or metadata, while its revision is `expectedRevision`. */
  edit(
    sessionId: string,
    id: string,
    edit: MessageEdit,
    expectedRevision: number | undefined,
    at: number,
  ): Promise<MessageChange> {
    return this.change(sessionId, id, expectedRevision, {
      ...(edit.content !== undefined ? { content: edit.content } : {}),
      ...(edit.metadata !== undefined ? { metadata: jsonOrNull(edit.metadata) } : {}),
      editedAt: at,
    });
  }

  /**
   * Removes the message's content, metadata and tool calls for good, leaving its role, times
   * and place, the time of the redaction and `reason`. The rows of the search index go with
   * the content (the message-search migration's triggers).
   */
  async redact(sessionId: string, id: string, reason: string, at: number): Promise<MessageChange> {
    const sqlite = this.dataSource.options.type !== 'postgres';
    // SQLite: the cells the content leaves are zeroed, not left in free space on the page.
    if (sqlite) await this.dataSource.query('PRAGMA secure_delete = ON');
    const change = await this.change(sessionId, id, undefined, {
      content: '',
      metadata: null,
      toolCalls: null,
      redactedAt: at,
      redactionReason: reason,
    });
    // And the pages that held it in the write-ahead log are written back and the log emptied,
    // where no reader holds it: cheap, and best effort (the next checkpoint does it anyway).
    if (sqlite && change.kind === 'changed') {
      await this.dataSource.query('PRAGMA wal_checkpoint(TRUNCATE)').catch(() => undefined);
    }
    return change;
  }

  private async change(
    sessionId: string,
    id: string,
    expectedRevision: number | undefined,
    set: Partial<MessageEntity>,
  ): Promise<MessageChange> {
    this.readiness.assertReady();
    try {
      return await this.transactions.run(async (manager) => {
        // First a write, on SQLite too: a transaction that read first would fail with a stale
        // snapshot whenever an append committed between its read and its write.
        const locked = await manager
          .createQueryBuilder()
          .update(SessionEntity)
          .set({ revision: () => '"revision" + 1' })
          .where('id = :sessionId', { sessionId })
          .execute();
        if (!locked.affected) throw new Unchanged();
        const session = await manager.findOneByOrFail(SessionEntity, { id: sessionId });
        const seq = session.revision;
        const update = manager
          .createQueryBuilder()
          .update(MessageEntity)
          .set({ ...set, revision: () => 'coalesce("revision", 1) + 1', changeSeq: seq })
          .where('id = :id AND session_id = :sessionId AND redacted_at IS NULL', {
            id,
            sessionId,
          });
        if (expectedRevision !== undefined) {
          update.andWhere('coalesce(revision, 1) = :expectedRevision', { expectedRevision });
        }
        const { affected } = await update.execute();
        if (!affected) throw new Unchanged();
        await this.notify(manager, sessionId, id, seq);
        const entity = await manager.findOneByOrFail(MessageEntity, { id });
        return { kind: 'changed', record: messageRecordFromEntity(entity), sessionRevision: seq };
      });
    } catch (error) {
      if (!(error instanceof Unchanged)) throw error;
    }
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
