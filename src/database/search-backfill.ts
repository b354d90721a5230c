import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { type DataSource, type EntityManager } from 'typeorm';
import { describeError } from '../common/errors/describe-error.js';
import { type DatabaseReadiness } from './database-readiness.js';

/** Messages indexed per transaction: a few milliseconds of the write lock at a time. */
export const BACKFILL_BATCH_ROWS = 500;
/** And at most this much content (but one message, whatever its size): SQLite's write lock. */
export const BACKFILL_BATCH_BYTES = 1024 * 1024;
/** How long the backfill waits after a batch fails (the database down) before it tries again. */
export const BACKFILL_RETRY_MS = 5000;

/**
 * Indexes for search the messages stored before MessageSearch1765152000000, in the background,
 * BACKFILL_BATCH_ROWS per transaction, so that appends wait for one short batch at most, never
 * for the whole table. Where it has got to is in the database (`message_search_backfill`), so
 * a restart goes on from there; instances sharing a database may both run it, as a batch is
 * the same whoever does it. Messages stored since the migration are indexed by its triggers.
 * Until it is done, a search may miss messages stored before the upgrade: it logs when it
 * starts and when it is done.
 */
export class SearchBackfill implements OnApplicationBootstrap, OnApplicationShutdown {
  private stopped = false;
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly readiness: DatabaseReadiness,
    private readonly logger: Pick<Logger, 'log' | 'warn'> = new Logger('Search'),
  ) {}

  onApplicationBootstrap(): void {
    this.running = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    await this.running;
  }

  /** Runs batches until none is left or the app stops; a failed batch is tried again later. */
  async run(): Promise<void> {
    await Promise.race([this.readiness.ready, new Promise<void>((done) => (this.wake = done))]);
    let batches = 0;
    let failing = false;
    while (!this.stopped) {
      try {
        const more = await this.batch();
        if (failing) this.logger.log('Search backfill: the database answers again');
        failing = false;
        if (!more) break;
        if (batches === 0) {
          this.logger.log('Search backfill: indexing the messages stored before search existed');
        }
        batches += 1;
        // Other work (appends, reads) runs between batches.
        await new Promise<void>((done) => setImmediate(done));
      } catch (error) {
        if (!failing) {
          this.logger.warn(
            `Search backfill: a batch failed (${describeError(error)}); trying again in ${BACKFILL_RETRY_MS} ms`,
          );
        }
        failing = true;
        await new Promise<void>((done) => {
          this.wake = done;
          this.timer = setTimeout(done, BACKFILL_RETRY_MS);
        });
      }
    }
    if (batches > 0 && !this.stopped) {
      this.logger.log(
        `Search backfill: done (${batches} batch(es) of up to ${BACKFILL_BATCH_ROWS})`,
      );
    }
  }

  /** Indexes the next batch; whether any was left. */
  batch(): Promise<boolean> {
    if (this.dataSource.options.type === 'postgres') {
      return this.dataSource.transaction((manager) => postgresBatch(manager));
    }
    return sqliteBatch(this.dataSource);
  }
}

/**
 * SQLite: the batch is chosen by reads outside the transaction, whose first statement then
 * writes. A transaction that read first would fail (SQLITE_BUSY, its snapshot stale) whenever an
 * append committed between its read and its first write, which under steady appends is always.
 */
async function sqliteBatch(dataSource: DataSource): Promise<boolean> {
  const [state] = await dataSource.query<{ after: number; last: number }[]>(
    `SELECT "after_rowid" AS "after", "last_rowid" AS "last" FROM "message_search_backfill"`,
  );
  if (!state || state.after >= state.last) return false;
  const rows = await dataSource.query<{ rowid: number; bytes: number }[]>(
    `SELECT "rowid" AS "rowid", length(CAST("content" AS BLOB)) AS "bytes" FROM "messages" WHERE "rowid" > ? AND "rowid" <= ? ORDER BY "rowid" LIMIT ?`,
    [state.after, state.last, BACKFILL_BATCH_ROWS],
  );
  let through = rows.length === 0 ? state.last : rows[0].rowid;
  let bytes = 0;
  for (const row of rows) {
    bytes += row.bytes;
    if (bytes > BACKFILL_BATCH_BYTES && row.rowid !== rows[0].rowid) break;
    through = row.rowid;
  }
  await dataSource.transaction(async (manager) => {
    // A row here may be indexed already (a rowid used again since the migration, by a row its
    // trigger indexed): deleted first, it is indexed once.
    await manager.query(`DELETE FROM "messages_search" WHERE "rowid" > ? AND "rowid" <= ?`, [
      state.after,
      through,
    ]);
    await manager.query(
      `INSERT INTO "messages_search" ("rowid", "content") SELECT "rowid", "content" FROM "messages" WHERE "rowid" > ? AND "rowid" <= ?`,
      [state.after, through],
    );
    // Another instance on the same file may have done this batch meanwhile: the same rows.
    await manager.query(
      `UPDATE "message_search_backfill" SET "after_rowid" = ? WHERE "after_rowid" < ?`,
      [through, through],
    );
  });
  return true;
}

async function postgresBatch(manager: EntityManager): Promise<boolean> {
  const [state] = await manager.query<{ after: string; done: boolean }[]>(
    `SELECT "after_id" AS "after", "done" FROM "message_search_backfill" FOR UPDATE`,
  );
  if (!state || state.done) return false;
  const [{ upto }] = await manager.query<{ upto: string | null }[]>(
    `SELECT max("id") AS "upto" FROM (SELECT "id" FROM "messages" WHERE "id" > $1 ORDER BY "id" LIMIT $2) batch`,
    [state.after, BACKFILL_BATCH_ROWS],
  );
  if (upto === null) {
    await manager.query(`UPDATE "message_search_backfill" SET "done" = true`);
    return false;
  }
  // Setting content to itself runs the trigger that sets the vector; rows it set already
  // (stored since the migration) are left alone.
  await manager.query(
    `UPDATE "messages" SET "content" = "content" WHERE "id" > $1 AND "id" <= $2 AND "search_vector" IS NULL`,
    [state.after, upto],
  );
  await manager.query(`UPDATE "message_search_backfill" SET "after_id" = $1`, [upto]);
  return true;
}
