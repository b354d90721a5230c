import { constants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { errorCode } from '../common/errors/describe-error.js';

// SQLite's own O_NOFOLLOW (3.31+; node-sqlite3 hands its flags to sqlite3_open_v2 unchanged):
// the open fails instead of following a symlink put where the lock file belongs.
const SQLITE_OPEN_NOFOLLOW = 0x01000000;

/** The file is not one the lock may use (a symlink, a directory, ...): nothing was touched. */
export class UnusableLockFileError extends Error {
  override readonly name = 'UnusableLockFileError';
  readonly code = 'ENOTREGULAR';

  constructor(path: string, what: string) {
    super(`${path} is ${what}: not used as a lock file, left untouched`);
  }
}

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
    private readonly identity: { dev: number; ino: number },
  ) {}

  /**
   * Takes the lock on `directory/name`, creating the file; null while its owner lives. Rejects
   * with UnusableLockFileError, touching nothing, when the name is a symlink or not a file.
   */
  static async tryAcquire(directory: string, name: string): Promise<OwnerLock | null> {
    const path = join(directory, name);
    await refuseIrregular(path);
    const database = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened = new sqlite3.Database(
        path,
        sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
        (error) => (error ? reject(error) : resolve(opened)),
      );
    });
    database.configure('busyTimeout', 0);
    try {
      // No rollback journal beside the file: the lock is all this database is for.
      await run(database, 'PRAGMA journal_mode = OFF');
      await run(database, 'BEGIN EXCLUSIVE');
      const identity = await restrict(path);
      return new OwnerLock(path, database, identity);
    } catch (error) {
      await close(database);
      if (errorCode(error) === 'SQLITE_BUSY') return null;
      throw error;
    }
  }

  /** Whether the lock's file is still the one at its path (not deleted, not replaced). */
  async intact(): Promise<boolean> {
    try {
      const { dev, ino } = await lstat(this.path);
      return dev === this.identity.dev && ino === this.identity.ino;
    } catch (error) {
      // ENOTDIR: SPOOL_DIR is a file now; the lock went with the directory, as when deleted.
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return false;
      throw error;
    }
  }

  /** Lets go of the lock (the file stays: the caller removes it first when nothing is left to own). */
  async release(): Promise<void> {
    await close(this.database);
  }
}

/** Rejects when `path` exists and is not a regular file; a missing one SQLite creates. */
async function refuseIrregular(path: string): Promise<void> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (stats.isSymbolicLink()) throw new UnusableLockFileError(path, 'a symlink');
  if (!stats.isFile()) throw new UnusableLockFileError(path, 'not a regular file');
}

/** Mode 0600 through a handle that cannot follow a symlink; resolves with the file's identity. */
async function restrict(path: string): Promise<{ dev: number; ino: number }> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new UnusableLockFileError(path, 'not a regular file');
    await handle.chmod(0o600);
    return { dev: stats.dev, ino: stats.ino };
  } finally {
    await handle.close();
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
