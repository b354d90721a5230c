import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { type MessageRecord } from '../message/message-record.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { MessageStore, type SessionWrite, type WriteResult } from './message-store.js';
import { messageRecordFromEntity } from './record-mappers.js';

// 12 bound values a row; stays under SQLite's limit of host parameters in one statement.
const INSERT_CHUNK_ROWS = 500;

/** What TypeORM's `simple-json` columns hold: the JSON text, or NULL. */
function toJsonColumn(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

@Injectable()
export class TypeOrmMessageStore extends MessageStore {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    super();
  }

  /**
   * One transaction, two kinds of statement whatever the number of sessions: a multi-row
   * upsert of the sessions (creating new ones, adding to counters and revisions) and multi-row
   * inserts of the messages. Per-row ORM statements cost far more than the commit here.
   */
  async write(writes: SessionWrite[]): Promise<WriteResult[]> {
    return this.dataSource.transaction(async (manager) => {
      const storedAt = Date.now();
      const batches: { sessionId: string; records: MessageRecord[] }[] = [];
      for (const write of writes) {
        const records = write.skipExisting
          ? await this.withoutStored(manager, write.sessionId, write.records)
          : write.records;
        batches.push({ sessionId: write.sessionId, records });
      }
      const written = batches.filter((batch) => batch.records.length > 0);
      if (written.length === 0) return batches.map(() => ({ stored: [], revision: null }));
      await this.upsertSessions(manager, written, storedAt);
      const records = written.flatMap((batch) => batch.records);
      for (let start = 0; start < records.length; start += INSERT_CHUNK_ROWS) {
        await this.insertMessages(
          manager,
          records.slice(start, start + INSERT_CHUNK_ROWS),
          storedAt,
        );
      }
      const revisions = await this.revisionsOf(
        manager,
        written.map((batch) => batch.sessionId),
      );
      return batches.map((batch) => ({
        stored: batch.records,
        revision: batch.records.length > 0 ? (revisions.get(batch.sessionId) ?? null) : null,
      }));
    });
  }

  /** Revisions as this transaction leaves them, so caches can tell whether they missed a write. */
  private async revisionsOf(
    manager: EntityManager,
    sessionIds: string[],
  ): Promise<Map<string, number>> {
    const rows = await manager
      .createQueryBuilder(SessionEntity, 'session')
      .select(['session.id', 'session.revision'])
      .where('session.id IN (:...sessionIds)', { sessionIds })
      .getMany();
    return new Map(rows.map((row) => [row.id, row.revision]));
  }

  async probeWrite(): Promise<void> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      try {
        // A write statement takes the write lock even when it matches no row.
        await runner.query(`UPDATE "sessions" SET "title" = "title" WHERE 1 = 0`);
      } finally {
        await runner.rollbackTransaction();
      }
    } finally {
      await runner.release();
    }
  }

  async findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]> {
    if (clientMessageIds.length === 0) return [];
    const rows = await this.dataSource.getRepository(MessageEntity).find({
      where: { sessionId, clientMessageId: In(clientMessageIds) },
    });
    return rows.map(messageRecordFromEntity);
  }

  private async upsertSessions(
    manager: EntityManager,
    batches: { sessionId: string; records: MessageRecord[] }[],
    storedAt: number,
  ): Promise<void> {
    // One row per session: a session's writes in one group are merged (PostgreSQL refuses to
    // update one row twice in one upsert).
    const rows = new Map<string, { createdAt: number; count: number }>();
    for (const batch of batches) {
      const createdAt = Math.min(...batch.records.map((record) => record.acceptedAt));
      const row = rows.get(batch.sessionId);
      if (row) {
        row.count += batch.records.length;
        row.createdAt = Math.min(row.createdAt, createdAt);
      } else {
        rows.set(batch.sessionId, { createdAt, count: batch.records.length });
      }
    }
    const values: unknown[] = [];
    // Row locks taken in one global order, so two instances' transactions cannot deadlock.
    const ordered = [...rows].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    for (const [sessionId, row] of ordered) {
      values.push(sessionId, row.createdAt, storedAt, row.count, row.count);
    }
    await manager.query(
      `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision")
       VALUES ${this.placeholders(rows.size, 5)}
       ON CONFLICT ("id") DO UPDATE SET
         "message_count" = "sessions"."message_count" + excluded."message_count",
         "revision" = "sessions"."revision" + excluded."revision",
         "updated_at" = excluded."updated_at"`,
      values,
    );
  }

  private async insertMessages(
    manager: EntityManager,
    records: MessageRecord[],
    storedAt: number,
  ): Promise<void> {
    const values: unknown[] = [];
    for (const record of records) {
      values.push(
        record.id,
        record.sessionId,
        record.orderKey,
        record.role,
        record.content,
        record.clientMessageId,
        record.toolName,
        record.toolCallId,
        toJsonColumn(record.toolCalls),
        toJsonColumn(record.metadata),
        record.acceptedAt,
        storedAt,
      );
    }
    await manager.query(
      `INSERT INTO "messages" ("id", "session_id", "order_key", "role", "content",
         "client_message_id", "tool_name", "tool_call_id", "tool_calls", "metadata",
         "accepted_at", "stored_at")
       VALUES ${this.placeholders(records.length, 12)}`,
      values,
    );
  }

  /** `(?, ?), (?, ?)` for SQLite, `($1, $2), ($3, $4)` for PostgreSQL. */
  private placeholders(rows: number, columns: number): string {
    const numbered = this.dataSource.options.type === 'postgres';
    const groups: string[] = [];
    let index = 0;
    for (let row = 0; row < rows; row++) {
      const marks: string[] = [];
      for (let column = 0; column < columns; column++) {
        index += 1;
        marks.push(numbered ? `$${index}` : '?');
      }
      groups.push(`(${marks.join(', ')})`);
    }
    return groups.join(', ');
  }

  private async withoutStored(
    manager: EntityManager,
    sessionId: string,
    records: MessageRecord[],
  ): Promise<MessageRecord[]> {
    const ids = records.map((record) => record.id);
    const clientIds = records.flatMap((record) =>
      record.clientMessageId ? [record.clientMessageId] : [],
    );
    const stored = await manager
      .createQueryBuilder(MessageEntity, 'message')
      .select(['message.id', 'message.clientMessageId'])
      .where('message.id IN (:...ids)', { ids })
      .orWhere(
        clientIds.length > 0
          ? 'message.session_id = :sessionId AND message.client_message_id IN (:...clientIds)'
          : '1 = 0',
        { sessionId, clientIds },
      )
      .getMany();
    const storedIds = new Set(stored.map((row) => row.id));
    const seenClientIds = new Set(stored.map((row) => row.clientMessageId));
    // A replayed batch can hold two acceptances of one clientMessageId (a retry accepted again
    // after the first copy was spooled): the first one wins, as it would have live.
    return records.filter((record) => {
      if (storedIds.has(record.id)) return false;
      if (!record.clientMessageId) return true;
      if (seenClientIds.has(record.clientMessageId)) return false;
      seenClientIds.add(record.clientMessageId);
      return true;
    });
  }
}
