import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/**
 * The newest times the database holds: what the instance's clock must move past at start, so
 * that a stored session's order keys move on from what is stored (an earlier run whose clock was
 * ahead left later keys than this clock would give) and no message accepted from now on is
 * older than a stored tombstone. Both are one index's last entry (see the stored-times
 * migration): one lookup each, however many rows there are.
 */
@Injectable()
export class StoredTimes {
  constructor(@InjectDataSource(SCRIBE_CONNECTION) private readonly dataSource: DataSource) {}

  /** The newest acceptance or deletion time stored; 0 for an empty database. */
  async latest(): Promise<number> {
    const rows: { accepted: unknown; deleted: unknown }[] = await this.dataSource.query(
      `SELECT (SELECT MAX("accepted_at") FROM "messages") AS "accepted",
              (SELECT MAX("deleted_at") FROM "deleted_sessions") AS "deleted"`,
    );
    // PostgreSQL hands BIGINT back as a string.
    return Math.max(Number(rows[0]?.accepted ?? 0), Number(rows[0]?.deleted ?? 0));
  }
}
