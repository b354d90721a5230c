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
    await createIfMissing(path);
    const database = await new Promise<sqlite3.Database>((resolve, reject) => {
      // No OPEN_CREATE: the file was made above, with its mode; one deleted since is an error.
      const opened = new sqlite3.Database(
        path,
        sqlite3.OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW,
        (error) => (error ? reject(error) : resolve(opened)),
      );
    });
    database.configure('busyTimeout', 0);
    try {
      // No rollback journal beside the file: the lock is all this database is for.
      await run(database, 'PRAGMA journal_mode = OFF');
      await run(database, 'BEGIN EXCLUSIVE');
      // From here on no descriptor of this process may be opened and closed on the file:
      // closing any descriptor of a file drops every POSIX lock the process holds on it (a
      // kernel rule SQLite works around for its own descriptors only), and another instance
      // would then adopt this live journal. So the identity comes from the path (lstat).
      const stats = await lstat(path);
      if (!stats.isFile()) throw new UnusableLockFileError(path, 'not a regular file');
      return new OwnerLock(path, database, { dev: stats.dev, ino: stats.ino });
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

/**
 * Makes the lock file, mode 0600, when there is none; rejects when `path` exists and is not a
 * regular file. An existing file keeps its mode: it may be held by its owner, and opening a
 * descriptor on a file this process holds would drop the lock (see tryAcquire).
 */
async function createIfMissing(path: string): Promise<void> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
    try {
      // O_EXCL and O_NOFOLLOW: a name that appeared meanwhile, or a symlink, is not followed.
      const created = await open(
        path,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      );
      // A new file nobody holds yet: closing this descriptor drops no lock. open() honours the
      // umask; the mode must be exact.
      try {
        await created.chmod(0o600);
      } finally {
        await created.close();
      }
      return;
    } catch (createError) {
      if (errorCode(createError) !== 'EEXIST') throw createError;
      stats = await lstat(path);
    }
  }
  if (stats.isSymbolicLink()) throw new UnusableLockFileError(path, 'a symlink');
  if (!stats.isFile()) throw new UnusableLockFileError(path, 'not a regular file');
}

function run(database: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) =>
    database.exec(sql, (error) => (error ? reject(error) : resolve())),
  );
}

function close(database: sqlite3.Database): Promise<void> {
  return new Promise((resolve) => database.close(() => resolve()));
}
