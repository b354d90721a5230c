import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { itemsWithin } from '../common/pagination/byte-bounded-page.js';
import { idPrefixRange } from '../common/validation/session-id.js';
import { type MessageRecord } from '../message/message-record.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';
import { MessageEntity } from './entities/message.entity.js';
import { inIdOrder, messageRecordFromEntity } from './record-mappers.js';
import { type PageAdmission } from './session-list-queries.js';
import { estimatedRecordBytes } from './session-queries.js';

/**
 * A search, already turned into each database's own syntax from safe terms (SearchQuery does
 * that: no user text reaches either as an operator).
 */
export interface SearchExpression {
  /** An FTS5 MATCH expression: quoted strings, `*` after one for a prefix, spaces for AND. */
  readonly fts5: string;
  /** A to_tsquery('simple', …) text: quoted lexemes, `:*`, `<->` and `&`. */
  readonly tsquery: string;
}

export interface MessageSearchRequest {
  expression: SearchExpression;
  /** Only this session's messages. */
  sessionId?: string;
  /** Only sessions whose id starts with this (a caller limited to its own sessions). */
  idPrefix?: string;
  /** How many of the best matches come before the page. */
  offset: number;
  first: number;
  maxBytes: number;
}

/** The matches of a page, best first, and whether more follow. */
export interface MessageSearchPage {
  items: MessageRecord[];
  more: boolean;
}

/**
 * Full-text search over stored messages (see MessageSearch1765152000000 for the index): best
 * first (SQLite's bm25, PostgreSQL's ts_rank_cd, which reads the message alone; on SQLite a
 * caller limited to a prefix gets the newest first, see sqliteSearch), ties by id, a page of `first` after `offset`,
 * fewer once they reach `maxBytes`; `admit` hears the page's estimated bytes before its rows
 * are read. The match's ids and sizes come first, from the index; the rows by id after.
 */
@Injectable()
export class MessageSearch {
  constructor(
    @InjectRepository(MessageEntity, SCRIBE_CONNECTION)
    private readonly messages: Repository<MessageEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  async search(request: MessageSearchRequest, admit?: PageAdmission): Promise<MessageSearchPage> {
    this.readiness.assertReady();
    const postgres = this.messages.manager.connection.options.type === 'postgres';
    const { sql, values } = postgres ? postgresSearch(request) : sqliteSearch(request);
    const rows = await this.messages.query<{ id: string; bytes: number | string }[]>(sql, values);
    const sizes = rows.slice(0, request.first).map((row) => Number(row.bytes));
    const count = itemsWithin(sizes, request.first, request.maxBytes);
    await admit?.(sizes.slice(0, count).reduce((sum, size) => sum + size, 0));
    const ids = rows.slice(0, count).map((row) => row.id);
    const entities = ids.length > 0 ? await this.messages.findBy({ id: In(ids) }) : [];
    // A message deleted between the two reads is left out.
    return { items: inIdOrder(ids, entities, messageRecordFromEntity), more: rows.length > count };
  }
}

interface Query {
  sql: string;
  values: unknown[];
}

function sqliteSearch(request: MessageSearchRequest): Query {
  const values: unknown[] = [request.expression.fts5];
  const where = ['"messages_search" MATCH ?'];
  if (request.sessionId !== undefined) {
    where.push('message."session_id" = ?');
    values.push(request.sessionId);
  }
  if (request.idPrefix !== undefined) {
    const { from, to } = idPrefixRange(request.idPrefix);
    where.push('message."session_id" >= ? AND message."session_id" < ?');
    values.push(from, to);
  }
  values.push(request.first + 1, request.offset);
  // bm25 weighs a word by how rare it is among all messages: ranked so, a caller limited to its
  // own sessions could count other users' messages holding a word (add some of its own, watch
  // its matches change places). Its matches come newest first instead.
  const order =
    request.idPrefix === undefined
      ? '"messages_search"."rank", message."id"'
      : 'message."accepted_at" DESC, message."id"';
  return {
    sql:
      `SELECT message."id" AS "id", ${estimatedRecordBytes(false)} AS "bytes" ` +
      `FROM "messages_search" JOIN "messages" message ON message."rowid" = "messages_search"."rowid" ` +
      `WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ? OFFSET ?`,
    values,
  };
}

function postgresSearch(request: MessageSearchRequest): Query {
  const values: unknown[] = [request.expression.tsquery];
  const where = [`message."search_vector" @@ to_tsquery('simple', $1)`];
  if (request.sessionId !== undefined) {
    values.push(request.sessionId);
    where.push(`message."session_id" = $${values.length}`);
  }
  if (request.idPrefix !== undefined) {
    const { from, to } = idPrefixRange(request.idPrefix);
    values.push(from, to);
    where.push(
      `message."session_id" COLLATE "C" >= $${values.length - 1} AND message."session_id" COLLATE "C" < $${values.length}`,
    );
  }
  values.push(request.first + 1, request.offset);
  return {
    sql:
      `SELECT message."id" AS "id", ${estimatedRecordBytes(true)} AS "bytes" FROM "messages" message ` +
      `WHERE ${where.join(' AND ')} ` +
      `ORDER BY ts_rank_cd(message."search_vector", to_tsquery('simple', $1)) DESC, message."id" ` +
      `LIMIT $${values.length - 1} OFFSET $${values.length}`,
    values,
  };
}
