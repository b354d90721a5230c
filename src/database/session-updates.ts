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

/** A session's own fields as an export gave them, to be restored by its import. */
export interface ExportedSessionFields {
  title: string | null;
  metadata: unknown;
  createdAt: number;
  updatedAt: number;
  revision: number;
}

/** Changes of a session's own fields (title, metadata), apart from its messages. */
@Injectable()
export class SessionUpdates {
  constructor(
    @InjectRepository(SessionEntity, SCRIBE_CONNECTION)
    private readonly sessions: Repository<SessionEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  /**
   * Gives an imported session the fields its export had, once it holds exactly the exported
   * messages (`messageCount` stored, nothing else): its title, metadata and times, and a
   * revision at least the exported one. The revision moves on by one more when the title or
   * metadata change, as updateSession's would, and never goes back. The session as it now is;
   * undefined when it does not hold exactly those messages, or changed between the read and the
   * update (then nothing is changed).
   */
  async restoreImported(
    id: string,
    fields: ExportedSessionFields,
    messageCount: number,
  ): Promise<SessionRecord | undefined> {
    this.readiness.assertReady();
    const entity = await this.sessions.findOneBy({ id });
    if (!entity || entity.messageCount !== messageCount) return undefined;
    const changed =
      entity.title !== fields.title ||
      JSON.stringify(entity.metadata ?? null) !== JSON.stringify(fields.metadata ?? null);
    const revision = Math.max(entity.revision + (changed ? 1 : 0), fields.revision);
    const { affected } = await this.sessions
      .createQueryBuilder()
      .update(SessionEntity)
      .set({
        title: fields.title,
        metadata: fields.metadata as SessionEntity['metadata'],
        createdAt: fields.createdAt,
        updatedAt: fields.updatedAt,
        revision,
      })
      .where('id = :id AND revision = :read AND message_count = :count', {
        id,
        read: entity.revision,
        count: messageCount,
      })
      .execute();
    if (!affected) return undefined;
    if (revision !== entity.revision) await this.notify(id);
    return sessionRecordFromEntity({ ...entity, ...fields, revision } as SessionEntity);
  }

  /** Other instances' subscribers hear of a change (see commit-notices.ts); PostgreSQL only. */
  private async notify(id: string): Promise<void> {
    if (this.sessions.manager.connection.options.type === 'postgres') {
      await this.sessions.query(NOTIFY_SQL, [SESSIONS_CHANNEL, id]);
    }
  }

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
    await this.notify(id);
    return { kind: 'updated', session };
  }
}
