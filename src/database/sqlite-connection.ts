import sqlite3 from 'sqlite3';

/** One node-sqlite3 connection with promises; statements run one after the other. */
export class SqliteConnection {
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

  all(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    return new Promise((resolve, reject) => {
      this.database.all(sql, values, (error, rows: Record<string, unknown>[]) =>
        error ? reject(error) : resolve(rows),
      );
    });
  }

  /** Runs a statement; resolves with how many rows it inserted or changed. */
  run(sql: string, values: unknown[] = []): Promise<number> {
    return new Promise((resolve, reject) => {
      this.database.run(sql, values, function (this: sqlite3.RunResult, error: Error | null) {
        if (error) reject(error);
        else resolve(this.changes);
      });
    });
  }

  /** Closes the connection; an open transaction is rolled back by SQLite. */
  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.database.close((error) => (error ? reject(error) : resolve()));
    });
  }
}
