import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { errorCode } from '../common/errors/describe-error.js';

/**
 * Who may replay a segment: the instance named in it while that instance lives, anyone once it
 * is gone. "Gone" must mean gone even after kill -9, in another container, after a reboot, so
 * it is the kernel's word: each instance holds an exclusive POSIX lock on its `owner-*.lock`
 * file, which the kernel drops the moment the process dies. Node has no flock(), so the lock is
 * taken through SQLite (already a dependency), which holds such locks for a write transaction;
 * the file is an empty SQLite database and nothing is ever written to it.
 */
export class OwnerLock {
  private constructor(
    readonly path: string,
    private readonly database: sqlite3.Database,
  ) {}

  /** Takes the lock on `directory/name`, creating the file; null while its owner lives. */
  static async tryAcquire(directory: string, name: string): Promise<OwnerLock | null> {
    const path = join(directory, name);
    const database = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened = new sqlite3.Database(
        path,
        sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE,
        (error) => (error ? reject(error) : resolve(opened)),
      );
    });
    database.configure('busyTimeout', 0);
    try {
      // No rollback journal beside the file: the lock is all this database is for.
      await run(database, 'PRAGMA journal_mode = OFF');
      await run(database, 'BEGIN EXCLUSIVE');
      await chmod(path, 0o600);
      return new OwnerLock(path, database);
    } catch (error) {
      await close(database);
      if (errorCode(error) === 'SQLITE_BUSY') return null;
      throw error;
    }
  }

  /** Lets go of the lock (the file stays: the caller removes it first when nothing is left to own). */
  async release(): Promise<void> {
    await close(this.database);
  }
}

function run(database: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) =>
    database.exec(sql, (error) => (error ? reject(error) : resolve())),
  );
}

function close(database: sqlite3.Database): Promise<void> {
  return new Promise((resolve) => database.close(() => resolve()));
}
