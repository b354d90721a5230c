import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DatabaseReadiness } from './database-readiness.js';
import { OwnTransactions } from './own-transactions.js';
import { DELETIONS_CHANNEL, NOTIFY_SQL } from './commit-notices.js';
import { DeletedSessionEntity } from './entities/deleted-session.entity.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/** What a deletion removed from the database. */
export interface DeletedRows {
  /** Whether the session was stored. */
  existed: boolean;
  messages: number;
}

/** When sessions were deleted, for the write path's replays (see TombstoneFilter). */
export abstract class Tombstones {
  /** The last time the session was deleted; undefined for one never deleted. */
  abstract deletedAt(sessionId: string): Promise<number | undefined>;
}

/**
 * Deletes sessions for good: the messages and the session row go, and a tombstone stays (see
 * the deleted_sessions migration). On PostgreSQL the other instances are told in the same
 * transaction (NOTIFY), so that they drop what they hold of it.
 */
@Injectable()
export class SessionDeletion extends Tombstones {
  constructor(
    @InjectDataSource(SCRIBE_CONNECTION) private readonly dataSource: DataSource,
    private readonly readiness: DatabaseReadiness,
    private readonly transactions: OwnTransactions,
  ) {
    super();
  }

  async delete(id: string, at: number): Promise<DeletedRows> {
    this.readiness.assertReady();
    return this.transactions.run(async (manager) => {
      // The session's row first, as every write of its messages takes it (appends, edits,
      // redactions): taken after its messages, it would deadlock with an edit.
      if (this.dataSource.options.type === 'postgres') {
        await manager.query(`SELECT 1 FROM "sessions" WHERE "id" = $1 FOR UPDATE`, [id]);
      }
      const messages = await manager
        .createQueryBuilder()
        .delete()
        .from(MessageEntity)
        .where('session_id = :id', { id })
        .execute();
      const sessions = await manager
        .createQueryBuilder()
        .delete()
        .from(SessionEntity)
        .where('id = :id', { id })
        .execute();
      await manager.upsert(DeletedSessionEntity, { id, deletedAt: at }, ['id']);
      if (this.dataSource.options.type === 'postgres') {
        await manager.query(NOTIFY_SQL, [DELETIONS_CHANNEL, id]);
      }
      return { existed: (sessions.affected ?? 0) > 0, messages: messages.affected ?? 0 };
    });
  }

  async deletedAt(sessionId: string): Promise<number | undefined> {
    this.readiness.assertReady();
    const tombstone = await this.dataSource
      .getRepository(DeletedSessionEntity)
      .findOneBy({ id: sessionId });
    return tombstone?.deletedAt;
  }
}
