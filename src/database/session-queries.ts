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
import { itemsWithin } from '../common/pagination/byte-bounded-page.js';
import { type Page, type PageRequest } from '../common/pagination/page-request.js';
import { MessageEntity } from './entities/message.entity.js';
import { type PageAdmission } from './session-list-queries.js';
import { SessionEntity } from './entities/session.entity.js';
import { messageRecordFromEntity, sessionRecordFromEntity } from './record-mappers.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

const FULL_LOAD_PAGE_ROWS = 100;

// recordBytes, in SQL: a fixed overhead and two bytes per unit of the strings, JSON as its
// stored text. Units are UTF-8 bytes here (SQL has no UTF-16 count): never fewer than the
// UTF-16 units recordBytes counts, so a page from the database is never larger than one from
// the cache.
export function estimatedRecordBytes(postgres: boolean): string {
  const bytes = (column: string) =>
    postgres ? `octet_length(message.${column})` : `length(CAST(message.${column} AS BLOB))`;
  const always = ['id', 'session_id', 'order_key', 'content'].map(bytes);
  const maybe = ['client_message_id', 'tool_name', 'tool_call_id', 'tool_calls', 'metadata'].map(
    (column) => `coalesce(${bytes(column)}, 0)`,
  );
  return `${RECORD_OVERHEAD_BYTES} + 2 * (${[...always, ...maybe].join(' + ')})`;
}

/** Reads of sessions and transcripts straight from the database. */
@Injectable()
export class SessionQueries {
  constructor(
    @InjectRepository(SessionEntity, SCRIBE_CONNECTION)
    private readonly sessions: Repository<SessionEntity>,
    @InjectRepository(MessageEntity, SCRIBE_CONNECTION)
    private readonly messages: Repository<MessageEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  /**
   * A session's row, on every read of a session (the gate compares its revision with the
   * cached copy's). In SQL of its own, hydrated as TypeORM hydrates (the driver's conversions
   * and the columns' transformers): `findOneBy` built a query builder for it each time, 3% of a
   * page read, about half of it TypeORM's own.
   */
  async findMetadata(id: string): Promise<SessionRecord | null> {
    this.readiness.assertReady();
    const [row] = await this.sessions.query<Record<string, unknown>[]>(this.byIdSql(), [id]);
    if (!row) return null;
    const { columns, connection } = this.sessions.metadata;
    const entity: Record<string, unknown> = {};
    for (const column of columns) {
      entity[column.propertyName] = connection.driver.prepareHydratedValue(
        row[column.databaseName],
        column,
      );
    }
    return sessionRecordFromEntity(entity as unknown as SessionEntity);
  }

  private byIdSqlText?: string;

  private byIdSql(): string {
    if (this.byIdSqlText === undefined) {
      const { columns, tablePath, connection } = this.sessions.metadata;
      const { driver } = connection;
      const id = columns.find((column) => column.propertyName === 'id')!;
      const parameter = driver.createParameter('id', 0);
      this.byIdSqlText = `SELECT ${columns.map((column) => driver.escape(column.databaseName)).join(', ')} FROM ${tablePath
        .split('.')
        .map((part) => driver.escape(part))
        .join('.')} WHERE ${driver.escape(id.databaseName)} = ${parameter}`;
    }
    return this.byIdSqlText;
  }

  /** Metadata and the whole transcript in accepted order: the expensive read. */
  /**
   * The session and its whole transcript, unless the transcript holds more than `maxBytes`
   * (estimated): then the load stops there and says so, and its pages are dropped.
   */
  async loadFull(id: string, maxBytes = Number.POSITIVE_INFINITY): Promise<FullSession | null> {
    this.readiness.assertReady();
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
    // The session row and the pages are read in statements of their own, outside a transaction:
    // a write committed between them is in the pages but not in the row's count, and a page of
    // the transcript answered a totalCount short by that write's messages (read-gap, while the
    // backlog was written back). The count is what was read. The revision stays the row's,
    // older than the pages at worst: the gate reloads a copy behind a later revision, and a
    // write-through that does not follow on from it drops the copy (applyStored).
    return {
      session: { ...session, messageCount: messages.length },
      messages,
      bytes,
      complete: true,
    };
  }

  /** The messages with these ids, in no particular order; ids not stored are left out. */
  async messagesByIds(ids: readonly string[]): Promise<MessageRecord[]> {
    this.readiness.assertReady();
    if (ids.length === 0) return [];
    return (await this.messages.findBy({ id: In([...ids]) })).map(messageRecordFromEntity);
  }

  /** A page of a transcript in accepted order after the order key `after`, `first + 1` rows. */
  async listMessages(sessionId: string, first: number, after?: string): Promise<MessageRecord[]> {
    this.readiness.assertReady();
    const query = this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .orderBy('message.order_key', 'ASC')
      .limit(first + 1);
    if (after !== undefined) query.andWhere('message.order_key > :after', { after });
    return (await query.getMany()).map(messageRecordFromEntity);
  }

  /**
   * The page of a transcript `request` asks for (see PageRequest): up to its count of messages,
   * fewer once they reach `maxBytes` as recordBytes estimates them (see itemsWithin); a
   * backward page keeps the newest that fit. The sizes are read first, without the rows, so
   * that a page of large messages is never fetched whole: what a page holds in memory is
   * bounded by `maxBytes` and one message.
   */
  async pageOfMessages(
    sessionId: string,
    request: PageRequest<string>,
    maxBytes: number,
    admit?: PageAdmission,
  ): Promise<Page<MessageRecord>> {
    this.readiness.assertReady();
    const backward = request.direction === 'backward';
    const order = backward ? 'DESC' : 'ASC';
    const sizes = this.messages
      .createQueryBuilder('message')
      .select('message.order_key', 'key')
      .addSelect(
        estimatedRecordBytes(this.messages.manager.connection.options.type === 'postgres'),
        'bytes',
      )
      .where('message.session_id = :sessionId', { sessionId })
      .orderBy('message.order_key', order)
      .limit(request.count + 1);
    if (request.after !== undefined) {
      sizes.andWhere('message.order_key > :after', { after: request.after });
    }
    if (request.before !== undefined) {
      sizes.andWhere('message.order_key < :before', { before: request.before });
    }
    const [rows, beyondCursor] = await Promise.all([
      sizes.getRawMany<{ key: string; bytes: number | string }>(),
      this.anyBeyondCursor(sessionId, request),
    ]);
    const count = itemsWithin(
      rows.slice(0, request.count).map((row) => Number(row.bytes)),
      request.count,
      maxBytes,
    );
    const more = rows.length > count;
    // The answer's share is reserved before a row is read (see ResponseBudget).
    await admit?.(rows.slice(0, count).reduce((sum, row) => sum + Number(row.bytes), 0));
    const flags = backward
      ? { hasNextPage: beyondCursor, hasPreviousPage: more }
      : { hasNextPage: more, hasPreviousPage: beyondCursor };
    if (count === 0) return { items: [], ...flags };
    // A message journaled earlier may be stored between the two reads, inside the range: the
    // limit keeps the page to the count that was sized, from the end it was sized from.
    const [from, to] = backward
      ? [rows[count - 1].key, rows[0].key]
      : [rows[0].key, rows[count - 1].key];
    const entities = await this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .andWhere('message.order_key >= :from', { from })
      .andWhere('message.order_key <= :to', { to })
      .orderBy('message.order_key', order)
      .limit(count)
      .getMany();
    if (backward) entities.reverse();
    return { items: entities.map(messageRecordFromEntity), ...flags };
  }

  /**
   * Whether anything lies on the far side of the cursor a page starts from: at or before
   * `after` paging forward, at or after `before` paging backward; false with no such cursor.
   */
  private async anyBeyondCursor(sessionId: string, request: PageRequest<string>): Promise<boolean> {
    const forward = request.direction === 'forward';
    const cursor = forward ? request.after : request.before;
    if (cursor === undefined) return false;
    const found = await this.messages
      .createQueryBuilder('message')
      .select('1', 'one')
      .where('message.session_id = :sessionId', { sessionId })
      .andWhere(`message.order_key ${forward ? '<=' : '>='} :cursor`, { cursor })
      .limit(1)
      .getRawMany();
    return found.length > 0;
  }

  /** Stored messages of a session with any of these client ids. */
  /** The stored messages of these ids, in whichever sessions they are, in no order. */
  async findByIds(ids: readonly string[]): Promise<MessageRecord[]> {
    this.readiness.assertReady();
    if (ids.length === 0) return [];
    const rows = await this.messages.find({ where: { id: In([...ids]) } });
    return rows.map(messageRecordFromEntity);
  }

  async findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]> {
    this.readiness.assertReady();
    if (clientMessageIds.length === 0) return [];
    const rows = await this.messages.find({
      where: { sessionId, clientMessageId: In(clientMessageIds) },
    });
    return rows.map(messageRecordFromEntity);
  }
}
