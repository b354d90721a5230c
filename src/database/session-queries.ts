import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { type MessageRecord } from '../message/message-record.js';
import { recordBytes, type FullSession, type SessionRecord } from '../message/session-record.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { messageRecordFromEntity, sessionRecordFromEntity } from './record-mappers.js';

const FULL_LOAD_PAGE_ROWS = 100;

/** A place in the session list: most recently updated first, ties broken by id. */
export interface SessionListPosition {
  updatedAt: number;
  id: string;
}

/** Reads of sessions and transcripts straight from the database. */
@Injectable()
export class SessionQueries {
  constructor(
    @InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>,
    @InjectRepository(MessageEntity) private readonly messages: Repository<MessageEntity>,
  ) {}

  async findMetadata(id: string): Promise<SessionRecord | null> {
    const entity = await this.sessions.findOneBy({ id });
    return entity ? sessionRecordFromEntity(entity) : null;
  }

  /** Metadata and the whole transcript in accepted order: the expensive read. */
  /**
   * The session and its whole transcript, unless the transcript holds more than `maxBytes`
   * (estimated): then the load stops there and says so, and its pages are dropped.
   */
  async loadFull(id: string, maxBytes = Number.POSITIVE_INFINITY): Promise<FullSession | null> {
    const session = await this.findMetadata(id);
    if (!session) return null;
    let bytes = 0;
    // Read in pages: each page is its own turn of the event loop, so cheap requests get served
    // between the pages of a long transcript instead of waiting for all of it.
    const messages: MessageRecord[] = [];
    for (;;) {
      const after = messages.length > 0 ? messages[messages.length - 1].orderKey : undefined;
      const page = await this.listMessages(id, FULL_LOAD_PAGE_ROWS - 1, after);
      for (const record of page) bytes += recordBytes(record);
      if (bytes > maxBytes) return { session, messages: [], bytes, complete: false };
      messages.push(...page);
      if (page.length < FULL_LOAD_PAGE_ROWS) break;
    }
    return { session, messages, bytes, complete: true };
  }

  /** Most recently updated first; `first + 1` rows so the caller can tell if more follow. */
  async listSessions(first: number, after?: SessionListPosition): Promise<SessionRecord[]> {
    const query = this.sessions
      .createQueryBuilder('session')
      .orderBy('session.updated_at', 'DESC')
      .addOrderBy('session.id', 'DESC')
      .limit(first + 1);
    if (after) {
      query.where(
        '(session.updated_at < :updatedAt OR (session.updated_at = :updatedAt AND session.id < :id))',
        after,
      );
    }
    return (await query.getMany()).map(sessionRecordFromEntity);
  }

  countSessions(): Promise<number> {
    return this.sessions.count();
  }

  /** A page of a transcript in accepted order after the order key `after`, `first + 1` rows. */
  async listMessages(sessionId: string, first: number, after?: string): Promise<MessageRecord[]> {
    const query = this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .orderBy('message.order_key', 'ASC')
      .limit(first + 1);
    if (after !== undefined) query.andWhere('message.order_key > :after', { after });
    return (await query.getMany()).map(messageRecordFromEntity);
  }

  /** Stored messages of a session with any of these client ids. */
  async findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]> {
    if (clientMessageIds.length === 0) return [];
    const rows = await this.messages.find({
      where: { sessionId, clientMessageId: In(clientMessageIds) },
    });
    return rows.map(messageRecordFromEntity);
  }
}
