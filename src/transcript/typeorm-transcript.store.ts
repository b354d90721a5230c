import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { SessionEntity } from '../session/entities/session.entity.js';
import { MessageEntity } from './entities/message.entity.js';
import { type MessageRecord } from './message-record.js';
import { messageEntityFromRecord, messageRecordFromEntity } from './message.mapper.js';
import { TranscriptStore, type SessionWrite } from './transcript.store.js';

// 12 bound values a row; stays under SQLite's limit of host parameters in one statement.
const INSERT_CHUNK_ROWS = 500;

@Injectable()
export class TypeOrmTranscriptStore extends TranscriptStore {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    super();
  }

  async write(writes: SessionWrite[]): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const storedAt = Date.now();
      for (const write of writes) {
        await this.writeSession(manager, write, storedAt);
      }
    });
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

  private async writeSession(
    manager: EntityManager,
    write: SessionWrite,
    storedAt: number,
  ): Promise<void> {
    const records = write.skipExisting
      ? await this.withoutStored(manager, write.sessionId, write.records)
      : write.records;
    if (records.length === 0) return;
    await manager
      .createQueryBuilder()
      .insert()
      .into(SessionEntity)
      .values({
        id: write.sessionId,
        title: null,
        createdAt: Math.min(...records.map((record) => record.acceptedAt)),
        updatedAt: storedAt,
        messageCount: 0,
        revision: 0,
      })
      .orIgnore()
      .updateEntity(false)
      .execute();
    for (let start = 0; start < records.length; start += INSERT_CHUNK_ROWS) {
      const chunk = records.slice(start, start + INSERT_CHUNK_ROWS);
      await manager
        .createQueryBuilder()
        .insert()
        .into(MessageEntity)
        .values(chunk.map((record) => messageEntityFromRecord(record, storedAt)))
        .updateEntity(false)
        .execute();
    }
    await manager
      .createQueryBuilder()
      .update(SessionEntity)
      .set({
        messageCount: () => `message_count + ${records.length}`,
        revision: () => `revision + ${records.length}`,
        updatedAt: storedAt,
      })
      .where('id = :id', { id: write.sessionId })
      .updateEntity(false)
      .execute();
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
    if (stored.length === 0) return records;
    const storedIds = new Set(stored.map((row) => row.id));
    const storedClientIds = new Set(stored.map((row) => row.clientMessageId));
    return records.filter(
      (record) =>
        !storedIds.has(record.id) &&
        !(record.clientMessageId && storedClientIds.has(record.clientMessageId)),
    );
  }
}
