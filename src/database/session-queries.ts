import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { type MessageRecord } from '../message/message-record.js';
import {
  RECORD_OVERHEAD_BYTES,
  recordBytes,
  type FullSession,
  type SessionRecord,
} from '../message/session-record.js';
import { itemsWithin, type BoundedPage } from '../common/pagination/byte-bounded-page.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { messageRecordFromEntity, sessionRecordFromEntity } from './record-mappers.js';

const FULL_LOAD_PAGE_ROWS = 100;

// recordBytes, in SQL: a fixed overhead and two bytes per unit of the strings, JSON as its
// stored text. Units are UTF-8 bytes here (SQL has no UTF-16 count): never fewer than the
// UTF-16 units recordBytes counts, so a page from the database is never larger than one from
// the cache.
function estimatedRecordBytes(postgres: boolean): string {
  const bytes = (column: string) =>
    postgres ? `octet_length(message.${column})` : `length(CAST(message.${column} AS BLOB))`;
  const always = ['id', 'session_id', 'order_key', 'content'].map(bytes);
  const maybe = ['client_message_id', 'tool_name', 'tool_call_id', 'tool_calls', 'metadata'].map(
    (column) => `coalesce(${bytes(column)}, 0)`,
  );
  return `${RECORD_OVERHEAD_BYTES} + 2 * (${[...always, ...maybe].join(' + ')})`;
}

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

  /**
   * A page of a transcript after the order key `after`: up to `first` messages, fewer once they
   * reach `maxBytes` as recordBytes estimates them (see itemsWithin). The sizes are read first,
   * without the rows, so that a page of large messages is never fetched whole: what a page
   * holds in memory is bounded by `maxBytes` and one message.
   */
  async pageOfMessages(
    sessionId: string,
    first: number,
    after: string | undefined,
    maxBytes: number,
  ): Promise<BoundedPage<MessageRecord>> {
    const sizes = this.messages
      .createQueryBuilder('message')
      .select('message.order_key', 'key')
      .addSelect(
        estimatedRecordBytes(this.messages.manager.connection.options.type === 'postgres'),
        'bytes',
      )
      .where('message.session_id = :sessionId', { sessionId })
      .orderBy('message.order_key', 'ASC')
      .limit(first + 1);
    if (after !== undefined) sizes.andWhere('message.order_key > :after', { after });
    const rows = await sizes.getRawMany<{ key: string; bytes: number | string }>();
    const count = itemsWithin(
      rows.slice(0, first).map((row) => Number(row.bytes)),
      first,
      maxBytes,
    );
    if (count === 0) return { items: [], more: false };
    // A message journaled earlier may be stored between the two reads, inside the range: the
    // limit keeps the page to the count that was sized.
    const entities = await this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .andWhere('message.order_key >= :from', { from: rows[0].key })
      .andWhere('message.order_key <= :to', { to: rows[count - 1].key })
      .orderBy('message.order_key', 'ASC')
      .limit(count)
      .getMany();
    return { items: entities.map(messageRecordFromEntity), more: rows.length > count };
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
