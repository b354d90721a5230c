import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Mutex } from 'async-mutex';
import { DataSource, type EntityManager } from 'typeorm';
import { SQLITE_BUSY_TIMEOUT_MS } from './data-source-options.js';
import { retryingDeadlocks } from './database-errors.js';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/**
 * Transactions on the API's own connection (not the write path's, which has its own): edits,
 * redactions, deletions.
 *
 * SQLite: one at a time, each begun IMMEDIATE, with secure_delete on. Why owned: TypeORM's
 * SQLite driver runs every query on its one connection, and takes a transaction begun while
 * another is open for a nested one (a savepoint inside it), so two concurrent `transaction`
 * calls would commit, or roll back, each other's work. And a read of another request that runs
 * on that connection between a deferred BEGIN and the first write makes it a read transaction,
 * whose write then fails (SQLITE_BUSY_SNAPSHOT) whenever the write path committed meanwhile:
 * IMMEDIATE takes the write lock at BEGIN. secure_delete zeroes what a change frees (the old
 * text of an edited or redacted message, its overflow pages), so that it is not left in the file.
 *
 * PostgreSQL: the pool gives each its own connection. One chosen as a deadlock's victim (or
 * failing serialization) changed nothing, and is tried again.
 */
@Injectable()
export class OwnTransactions {
  private readonly turns = new Mutex();

  constructor(@InjectDataSource(SCRIBE_CONNECTION) private readonly dataSource: DataSource) {}

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.dataSource.options.type === 'postgres') return this.retried(work);
    return this.turns.runExclusive(() => this.immediate(work));
  }

  /**
   * SQLite: writes the write-ahead log back into the database file and empties it (TRUNCATE),
   * so that no page an earlier change left there remains; false when a reader's snapshot still
   * needs it (try again later). It does not wait for that reader: waiting, it would hold every
   * writer back. PostgreSQL: nothing to do (its WAL is the server's), true.
   */
  async emptyWriteAheadLog(): Promise<boolean> {
    if (this.dataSource.options.type === 'postgres') return true;
    return this.turns.runExclusive(async () => {
      await this.dataSource.query('PRAGMA busy_timeout = 0');
      try {
        const [result] = await this.dataSource.query<{ busy: number; log: number }[]>(
          'PRAGMA wal_checkpoint(TRUNCATE)',
        );
        return result?.busy === 0;
      } catch {
        return false;
      } finally {
        await this.dataSource.query(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
      }
    });
  }

  private retried<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return retryingDeadlocks(() => this.dataSource.transaction(work));
  }

  private async immediate<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.query('PRAGMA secure_delete = ON');
      await runner.query('BEGIN IMMEDIATE');
      try {
        const result = await work(runner.manager);
        await runner.query('COMMIT');
        return result;
      } catch (error) {
        await runner.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      await runner.release();
    }
  }
}
