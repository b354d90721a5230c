import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { type SessionRecord } from '../message/session-record.js';
import { NOTIFY_SQL, SESSIONS_CHANNEL } from './commit-notices.js';
import { SessionEntity } from './entities/session.entity.js';
import { sessionRecordFromEntity } from './record-mappers.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/** What updateSession changes: a field left undefined stays as it is. */
export interface SessionChanges {
  title?: string | null;
  metadata?: unknown;
}

/** How an update ended: the session as it now is, no such session, or another revision. */
export type SessionUpdate =
  | { kind: 'updated'; session: SessionRecord }
  | { kind: 'not-found' }
  | { kind: 'conflict'; revision: number };

/** Changes of a session's own fields (title, metadata), apart from its messages. */
@Injectable()
export class SessionUpdates {
  constructor(
    @InjectRepository(SessionEntity, SCRIBE_CONNECTION)
    private readonly sessions: Repository<SessionEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  /**
   * Sets the title and metadata of a session in one statement that also moves its revision on
   * by one, only while its revision is still `expectedRevision` when one is given: two editors
   * cannot both win, and a reader's cached copy is seen to be stale.
   */
  async updateSession(
    id: string,
    changes: SessionChanges,
    expectedRevision?: number,
  ): Promise<SessionUpdate> {
    this.readiness.assertReady();
    const update = this.sessions
      .createQueryBuilder()
      .update(SessionEntity)
      .set({
        ...(changes.title !== undefined ? { title: changes.title } : {}),
        ...(changes.metadata !== undefined ? { metadata: changes.metadata } : {}),
        revision: () => '"revision" + 1',
      })
      .where('id = :id', { id });
    if (expectedRevision !== undefined) {
      update.andWhere('revision = :expectedRevision', { expectedRevision });
    }
    const { affected } = await update.execute();
    const entity = await this.sessions.findOneBy({ id });
    if (!entity) return { kind: 'not-found' };
    const session = sessionRecordFromEntity(entity);
    if (!affected) return { kind: 'conflict', revision: session.revision };
    if (this.sessions.manager.connection.options.type === 'postgres') {
      // Other instances' subscribers hear of it (see commit-notices.ts).
      await this.sessions.query(NOTIFY_SQL, [SESSIONS_CHANNEL, id]);
    }
    return { kind: 'updated', session };
  }
}
