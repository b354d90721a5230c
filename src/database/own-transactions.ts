import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Mutex } from 'async-mutex';
import { DataSource, type EntityManager } from 'typeorm';
import { SCRIBE_CONNECTION } from './database.tokens.js';

/**
 * Transactions on the API's own connection (not the write path's, which has its own), one at
 * a time on SQLite. Why owned: TypeORM's SQLite driver runs every query on its one connection
 * and takes a transaction begun while another is open for a nested one (a savepoint inside
 * it), so two concurrent `transaction` calls would commit, or roll back, each other's work.
 * PostgreSQL's pool gives each its own connection, and they run as they come.
 */
@Injectable()
export class OwnTransactions {
  private readonly turns = new Mutex();

  constructor(@InjectDataSource(SCRIBE_CONNECTION) private readonly dataSource: DataSource) {}

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (this.dataSource.options.type === 'postgres') return this.dataSource.transaction(work);
    return this.turns.runExclusive(() => this.dataSource.transaction(work));
  }
}
