import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { decodeCursor } from '../common/pagination/cursor.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { MessageEntity } from '../transcript/entities/message.entity.js';
import { type MessageRecord } from '../transcript/message-record.js';
import { messageRecordFromEntity } from '../transcript/message.mapper.js';
import { SessionEntity } from './entities/session.entity.js';
import { type FullSession, type SessionRecord } from './session-record.js';
import { parseSessionListKey, sessionRecordFromEntity } from './session.mapper.js';

const FULL_LOAD_PAGE_ROWS = 100;

// Matches the shape of the order keys this service issues; anything else is not our cursor.
const ORDER_KEY_PATTERN = /^\d{15}\.\d{6}\.[0-9a-z]{1,16}$/;

/** Reads of sessions and transcripts straight from the database. */
@Injectable()
export class SessionService {
  constructor(
    @InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>,
    @InjectRepository(MessageEntity) private readonly messages: Repository<MessageEntity>,
  ) {}

  async findMetadata(id: string): Promise<SessionRecord | null> {
    const entity = await this.sessions.findOneBy({ id });
    return entity ? sessionRecordFromEntity(entity) : null;
  }

  /** Metadata and the whole transcript in accepted order: the expensive read. */
  async loadFull(id: string): Promise<FullSession | null> {
    const session = await this.findMetadata(id);
    if (!session) return null;
    // Read in pages: each page is its own turn of the event loop, so cheap requests get served
    // between the pages of a long transcript instead of waiting for all of it.
    const messages: MessageRecord[] = [];
    for (;;) {
      const query = this.messages
        .createQueryBuilder('message')
        .where('message.session_id = :id', { id })
        .orderBy('message.order_key', 'ASC')
        .limit(FULL_LOAD_PAGE_ROWS);
      if (messages.length > 0) {
        query.andWhere('message.order_key > :after', {
          after: messages[messages.length - 1].orderKey,
        });
      }
      const page = await query.getMany();
      for (const row of page) messages.push(messageRecordFromEntity(row));
      if (page.length < FULL_LOAD_PAGE_ROWS) break;
    }
    return { session, messages };
  }

  /** Most recently updated first; `first + 1` rows so the caller can tell if more follow. */
  async listSessions(first: number, after?: string | null): Promise<SessionRecord[]> {
    const query = this.sessions
      .createQueryBuilder('session')
      .orderBy('session.updated_at', 'DESC')
      .addOrderBy('session.id', 'DESC')
      .limit(first + 1);
    if (after) {
      const position = parseSessionListKey(decodeCursor(after));
      if (!position) throw ScribeException.invalidInput('after', 'is not a cursor of this list');
      query.where(
        '(session.updated_at < :updatedAt OR (session.updated_at = :updatedAt AND session.id < :id))',
        position,
      );
    }
    return (await query.getMany()).map(sessionRecordFromEntity);
  }

  countSessions(): Promise<number> {
    return this.sessions.count();
  }

  /** A page of a transcript in accepted order, `first + 1` rows. */
  async listMessages(
    sessionId: string,
    first: number,
    after?: string | null,
  ): Promise<MessageRecord[]> {
    const query = this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .orderBy('message.order_key', 'ASC')
      .limit(first + 1);
    if (after) {
      query.andWhere('message.order_key > :after', { after: decodeMessageCursor(after) });
    }
    return (await query.getMany()).map(messageRecordFromEntity);
  }
}

export function decodeMessageCursor(cursor: string): string {
  const key = decodeCursor(cursor);
  if (!ORDER_KEY_PATTERN.test(key)) {
    throw ScribeException.invalidInput('after', 'is not a cursor of this list');
  }
  return key;
}
