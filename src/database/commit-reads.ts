import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { itemsWithin } from '../common/pagination/byte-bounded-page.js';
import { appendedEvent, changedEvent, type TranscriptEvent } from '../message/transcript-event.js';
import { MessageEntity } from './entities/message.entity.js';
import { messageRecordFromEntity } from './record-mappers.js';
import { estimatedRecordBytes } from './session-queries.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

interface EventRow {
  id: string;
  seq: number | string;
  kind: 'a' | 'c';
  bytes: number | string;
}

/**
 * A session's messages in the order they were committed (their commit numbers, see the
 * commit-seq migration): what a live subscriber missed, exactly, whichever instances wrote.
 */
@Injectable()
export class CommitReads {
  constructor(
    @InjectRepository(MessageEntity, SCRIBE_CONNECTION)
    private readonly messages: Repository<MessageEntity>,
    private readonly readiness: DatabaseReadiness,
  ) {}

  /**
   * Up to `count` events of the session's commit order after number `after`, in that order,
   * fewer once they pass `maxBytes` (always one); and whether more follow. The events are the
   * messages committed after it and, `withChanges`, the edits and redactions made after it,
   * each read as the message now is. A message changed twice since shows its last change only:
   * the earlier state is gone from the database, and the later one says all of it.
   */
  async committedAfter(
    sessionId: string,
    after: number,
    count: number,
    maxBytes: number,
    withChanges = false,
  ): Promise<{ items: TranscriptEvent[]; hasNextPage: boolean }> {
    this.readiness.assertReady();
    const postgres = this.messages.manager.connection.options.type === 'postgres';
    const mark = (index: number) => (postgres ? `$${index}` : '?');
    const bytes = estimatedRecordBytes(postgres);
    const part = (column: string, kind: string, first: number) =>
      `SELECT message.id AS id, message.${column} AS seq, '${kind}' AS kind, ${bytes} AS bytes FROM messages message WHERE message.session_id = ${mark(first)} AND message.${column} > ${mark(first + 1)}`;
    const sql = withChanges
      ? `SELECT * FROM (${part('commit_seq', 'a', 1)} UNION ALL ${part('change_seq', 'c', 3)}) events ORDER BY seq LIMIT ${mark(5)}`
      : `${part('commit_seq', 'a', 1)} ORDER BY seq LIMIT ${mark(3)}`;
    const values = withChanges
      ? [sessionId, after, sessionId, after, count + 1]
      : [sessionId, after, count + 1];
    return this.eventPage(sessionId, sql, values, count, maxBytes);
  }

  /**
   * Up to `count` edits and redactions made after number `after` of the session's messages at
   * or before order key `key`, in commit order, as committedAfter reads them: what a page's
   * cursor missed of the page it came from (see MessageStream).
   */
  async changesThrough(
    sessionId: string,
    after: number,
    key: string,
    count: number,
    maxBytes: number,
  ): Promise<{ items: TranscriptEvent[]; hasNextPage: boolean }> {
    this.readiness.assertReady();
    const postgres = this.messages.manager.connection.options.type === 'postgres';
    const mark = (index: number) => (postgres ? `$${index}` : '?');
    const sql = `SELECT message.id AS id, message.change_seq AS seq, 'c' AS kind, ${estimatedRecordBytes(postgres)} AS bytes FROM messages message WHERE message.session_id = ${mark(1)} AND message.change_seq > ${mark(2)} AND message.order_key <= ${mark(3)} ORDER BY message.change_seq LIMIT ${mark(4)}`;
    return this.eventPage(sessionId, sql, [sessionId, after, key, count + 1], count, maxBytes);
  }

  /** The events the rows of `sql` name, within `count` and `maxBytes`, read as they now are. */
  private async eventPage(
    sessionId: string,
    sql: string,
    values: unknown[],
    count: number,
    maxBytes: number,
  ): Promise<{ items: TranscriptEvent[]; hasNextPage: boolean }> {
    const rows = await this.messages.query<EventRow[]>(sql, values);
    const taken = itemsWithin(
      rows.slice(0, count).map((row) => Number(row.bytes)),
      count,
      maxBytes,
    );
    if (taken === 0) return { items: [], hasNextPage: false };
    const chosen = rows.slice(0, taken);
    const ids = [...new Set(chosen.map((row) => row.id))];
    const records = new Map(
      (await this.messages.findBy({ sessionId, id: In(ids) })).map((entity) => [
        entity.id,
        messageRecordFromEntity(entity),
      ]),
    );
    const items = chosen.flatMap((row): TranscriptEvent[] => {
      const record = records.get(row.id);
      if (!record) return [];
      if (row.kind === 'a') return [appendedEvent(record)];
      // Changed again since the first read: that later change took a number past every one
      // this page read, and its own event (on a later page, or live) carries the state it left.
      return record.changeSeq === Number(row.seq) ? [changedEvent(record)] : [];
    });
    return { items, hasNextPage: rows.length > taken };
  }

  /** The commit number of the session's message at `orderKey`; undefined when none has one. */
  async commitSeqOf(sessionId: string, orderKey: string): Promise<number | undefined> {
    this.readiness.assertReady();
    const entity = await this.messages.findOneBy({ sessionId, orderKey });
    return entity?.commitSeq ?? undefined;
  }
}
