import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { RECORD_OVERHEAD_BYTES, type SessionRecord } from '../message/session-record.js';
import { itemsWithin } from '../common/pagination/byte-bounded-page.js';
import { SessionEntity } from './entities/session.entity.js';
import { inIdOrder, sessionRecordFromEntity } from './record-mappers.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';
import { idPrefixRange } from '../common/validation/session-id.js';

/** A place in the session list: most recently updated first, ties broken by id. */
export interface SessionListPosition {
  updatedAt: number;
  id: string;
}

/**
 * Which sessions a list holds: updated at or after `updatedSince` (epoch ms), titles holding
 * `titleContains`, ids starting with `idPrefix` (a caller limited to its own sessions).
 */
export interface SessionFilter {
  updatedSince?: number;
  titleContains?: string;
  idPrefix?: string;
}

/** Called with a page's estimated bytes before its rows are read; throws to read none. */
export type PageAdmission = (bytes: number) => Promise<void>;

/** A page of the session list, whether more follow, and the bytes it was admitted with. */
export interface SessionListPage {
  sessions: SessionRecord[];
  more: boolean;
  bytes: number;
}

// A session's size as recordBytes counts a message's: a fixed overhead and two bytes per unit
// of its strings, metadata as its stored JSON (the text its answer is made of).
function estimatedSessionBytes(postgres: boolean): string {
  const bytes = (column: string) =>
    postgres ? `octet_length(session.${column})` : `length(CAST(session.${column} AS BLOB))`;
  return `${RECORD_OVERHEAD_BYTES} + 2 * (${bytes('id')} + coalesce(${bytes('title')}, 0) + coalesce(${bytes('metadata')}, 0))`;
}

function prefixBounds(prefix: string): { idFrom: string; idTo: string } {
  const { from, to } = idPrefixRange(prefix);
  return { idFrom: from, idTo: to };
}

/** The session list, straight from the database: filtered, paged, bounded in bytes. */
@Injectable()
export class SessionListQueries {
  constructor(
    @InjectRepository(SessionEntity, SCRIBE_CONNECTION)
    private readonly sessions: Repository<SessionEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  /**
   * Most recently updated first: up to `first`, fewer once they reach `maxBytes` (see
   * itemsWithin), as pages of messages are. The sizes are read
   * first, without the rows, and `admit` hears them before a row is read: 20 sessions of 1 MiB
   * of metadata must not be read whole to find out that they are too many.
   */
  async listSessions(
    first: number,
    after: SessionListPosition | undefined,
    filter: SessionFilter,
    maxBytes: number,
    admit?: PageAdmission,
  ): Promise<SessionListPage> {
    this.readiness.assertReady();
    const postgres = this.sessions.manager.connection.options.type === 'postgres';
    const query = this.filtered(filter)
      .select('session.id', 'id')
      .addSelect(estimatedSessionBytes(postgres), 'bytes')
      // A caller's own sessions are read by their id's range and sorted: ordered by the bare
      // column, PostgreSQL may walk IDX_sessions_updated from the newest and skip every other
      // user's session on the way (a million of them for an idle user's list). `+ 0` is the
      // same order, which no index gives, so the cost is the caller's own sessions.
      .orderBy(
        filter.idPrefix !== undefined ? 'session.updated_at + 0' : 'session.updated_at',
        'DESC',
      )
      .addOrderBy('session.id', 'DESC')
      .limit(first + 1);
    if (after) {
      query.andWhere(
        '(session.updated_at < :updatedAt OR (session.updated_at = :updatedAt AND session.id < :id))',
        after,
      );
    }
    const rows = await query.getRawMany<{ id: string; bytes: number | string }>();
    const sizes = rows.map((row) => Number(row.bytes));
    const count = itemsWithin(sizes.slice(0, first), first, maxBytes);
    const bytes = sizes.slice(0, count).reduce((sum, size) => sum + size, 0);
    await admit?.(bytes);
    const ids = rows.slice(0, count).map((row) => row.id);
    const entities = ids.length > 0 ? await this.sessions.findBy({ id: In(ids) }) : [];
    // A session deleted between the two reads is left out; one updated meanwhile keeps its place.
    const page = inIdOrder(ids, entities, sessionRecordFromEntity);
    return { sessions: page, more: rows.length > count, bytes };
  }

  /** Whether any session the filter keeps stands at or before `position` in the list. */
  async anySessionAtOrBefore(
    position: SessionListPosition,
    filter: SessionFilter = {},
  ): Promise<boolean> {
    this.readiness.assertReady();
    const found = await this.filtered(filter)
      .select('1', 'one')
      .andWhere(
        '(session.updated_at > :updatedAt OR (session.updated_at = :updatedAt AND session.id >= :id))',
        position,
      )
      .limit(1)
      .getRawMany();
    return found.length > 0;
  }

  async countSessions(filter: SessionFilter = {}): Promise<number> {
    this.readiness.assertReady();
    return this.filtered(filter).getCount();
  }

  /**
   * Sessions the filter keeps; a title is matched as it is (case counts) on both databases. An
   * id prefix is a range of ids in byte order (idPrefixRange): SQLite's primary key is in that
   * order; PostgreSQL's is in the database's collation, so there the range is said in `C`, which
   * its IDX_sessions_id_bytes index is in (see SessionIdPrefix1765065600000).
   */
  private filtered(filter: SessionFilter) {
    const query = this.sessions.createQueryBuilder('session').where('1 = 1');
    if (filter.idPrefix !== undefined) {
      const postgres = this.sessions.manager.connection.options.type === 'postgres';
      const id = postgres ? 'session.id COLLATE "C"' : 'session.id';
      query.andWhere(`${id} >= :idFrom AND ${id} < :idTo`, prefixBounds(filter.idPrefix));
    }
    if (filter.updatedSince !== undefined) {
      query.andWhere('session.updated_at >= :since', { since: filter.updatedSince });
    }
    if (filter.titleContains !== undefined) {
      const postgres = this.sessions.manager.connection.options.type === 'postgres';
      query.andWhere(
        postgres ? 'strpos(session.title, :title) > 0' : 'instr(session.title, :title) > 0',
        { title: filter.titleContains },
      );
    }
    return query;
  }
}
