import sqlite3 from 'sqlite3';

// Distinct statements kept prepared: a batch's INSERT differs only by its row count and the
// columns it binds, and its chunks come in a few sizes (see insertChunks).
export const PREPARED_LIMIT = 64;

/**
 * One node-sqlite3 connection with promises; statements run one after the other, each kept
 * prepared by its text, since parsing a multi-row INSERT costs about as much as running it.
 *
 * Why node-sqlite3 here and not better-sqlite3, which is faster in this thread: every SQLite
 * connection of one process must come from one copy of the SQLite library. POSIX locks belong
 * to the process, and closing any descriptor of a file drops all of them; one copy of SQLite
 * keeps track of that, two copies do not (https://www.sqlite.org/howtocorrupt.html, 2.2.1).
 * TypeORM's readers and the journal's owner locks use node-sqlite3; a better-sqlite3 writer
 * closing its connection after a failed write left TypeORM's reader on a stale snapshot in the
 * e2e suites.
 */
export class SqliteConnection {
  private readonly prepared = new Map<string, sqlite3.Statement>();

  private constructor(private readonly database: sqlite3.Database) {}

  /**
   * Opens an existing database file (never creates one: a file that went missing must fail
   * the open, not be replaced by an empty database).
   */
  static open(path: string, busyTimeoutMs: number): Promise<SqliteConnection> {
    return new Promise((resolve, reject) => {
      const database = new sqlite3.Database(path, sqlite3.OPEN_READWRITE, (error) => {
        if (error) {
          reject(error);
          return;
        }
        database.configure('busyTimeout', busyTimeoutMs);
        resolve(new SqliteConnection(database));
      });
    });
  }

  exec(sql: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.database.exec(sql, (error) => (error ? reject(error) : resolve()));
    });
  }

  async all(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    const statement = await this.statement(sql);
    return new Promise((resolve, reject) => {
      statement.all(values, (error: Error | null, rows: Record<string, unknown>[]) =>
        error ? reject(error) : resolve(rows),
      );
    });
  }

  /** Runs a statement; resolves with how many rows it inserted or changed. */
  async run(sql: string, values: unknown[] = []): Promise<number> {
    const statement = await this.statement(sql);
    return new Promise((resolve, reject) => {
      statement.run(values, function (this: sqlite3.RunResult, error: Error | null) {
        if (error) reject(error);
        else resolve(this.changes);
      });
    });
  }

  /**
   * Closes the connection; an open transaction is rolled back by SQLite. Its statements are
   * finalized first: SQLite refuses to close a connection that has any left, and one left open
   * would go on holding its transaction and the write lock.
   */
  async close(): Promise<void> {
    const statements = [...this.prepared.values()];
    this.prepared.clear();
    await Promise.all(statements.map(finalize));
    return new Promise((resolve, reject) => {
      this.database.close((error) => (error ? reject(error) : resolve()));
    });
  }

  /** How many statements are kept prepared (for tests). */
  get preparedCount(): number {
    return this.prepared.size;
  }

  private async statement(sql: string): Promise<sqlite3.Statement> {
    const known = this.prepared.get(sql);
    if (known) return known;
    const statement = await new Promise<sqlite3.Statement>((resolve, reject) => {
      const prepared = this.database.prepare(sql, (error) =>
        error ? reject(error) : resolve(prepared),
      );
    });
    if (this.prepared.size >= PREPARED_LIMIT) {
      const [oldestSql, oldest] = this.prepared.entries().next().value as [
        string,
        sqlite3.Statement,
      ];
      this.prepared.delete(oldestSql);
      void finalize(oldest);
    }
    this.prepared.set(sql, statement);
    return statement;
  }
}

function finalize(statement: sqlite3.Statement): Promise<void> {
  return new Promise((resolve) => statement.finalize(() => resolve()));
}
