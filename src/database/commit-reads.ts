import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { itemsWithin } from '../common/pagination/byte-bounded-page.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageEntity } from './entities/message.entity.js';
import { messageRecordFromEntity } from './record-mappers.js';
import { estimatedRecordBytes } from './session-queries.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

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
   * Up to `count` messages committed after number `after`, in commit order, fewer once they
   * pass `maxBytes` (always one); and whether more follow.
   */
  async committedAfter(
    sessionId: string,
    after: number,
    count: number,
    maxBytes: number,
  ): Promise<{ items: MessageRecord[]; hasNextPage: boolean }> {
    this.readiness.assertReady();
    const postgres = this.messages.manager.connection.options.type === 'postgres';
    const sizes = await this.messages
      .createQueryBuilder('message')
      .select('message.commit_seq', 'seq')
      .addSelect(estimatedRecordBytes(postgres), 'bytes')
      .where('message.session_id = :sessionId', { sessionId })
      .andWhere('message.commit_seq > :after', { after })
      .orderBy('message.commit_seq', 'ASC')
      .limit(count + 1)
      .getRawMany<{ seq: number | string; bytes: number | string }>();
    const taken = itemsWithin(
      sizes.slice(0, count).map((row) => Number(row.bytes)),
      count,
      maxBytes,
    );
    if (taken === 0) return { items: [], hasNextPage: false };
    const entities = await this.messages
      .createQueryBuilder('message')
      .where('message.session_id = :sessionId', { sessionId })
      .andWhere('message.commit_seq > :after', { after })
      .andWhere('message.commit_seq <= :last', { last: Number(sizes[taken - 1].seq) })
      .orderBy('message.commit_seq', 'ASC')
      .getMany();
    return { items: entities.map(messageRecordFromEntity), hasNextPage: sizes.length > taken };
  }

  /** The commit number of the session's message at `orderKey`; undefined when none has one. */
  async commitSeqOf(sessionId: string, orderKey: string): Promise<number | undefined> {
    this.readiness.assertReady();
    const entity = await this.messages.findOneBy({ sessionId, orderKey });
    return entity?.commitSeq ?? undefined;
  }
}
