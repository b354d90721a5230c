import sqlite3 from 'sqlite3';
import { type TcpProxy } from './tcp-proxy.js';

/** Puts Scribe's database down and back up, for a host's test of its own behaviour then. */
export interface DatabaseFaults {
  /**
   * From now on Scribe cannot write to its database, as in a real outage: appends are
   * journaled and answered QUEUED (or BUFFERED when the journal cannot take them either).
   * SQLite: another connection holds the database's write lock. PostgreSQL: the kit's TCP
   * proxy between Scribe and the server cuts every connection and refuses new ones.
   */
  databaseDown(): Promise<void>;
  /** Ends the outage. Scribe writes back what it holds on its own (see `ScribeTesting.settled`). */
  databaseUp(): Promise<void>;
  /** Whether the database is down now. */
  readonly isDown: boolean;
}

// A write of Scribe's may hold the lock for a moment when the outage starts: taking it is
// retried for this long before the test is told it could not be.
const LOCK_DEADLINE_MS = 5000;
const LOCK_RETRY_MS = 20;

/**
 * A real competing writer on the SQLite file (a migration, a backup tool, a second process
 * would be one): `BEGIN EXCLUSIVE` on a connection of its own. Scribe's writes then wait their
 * busy timeout and fail with SQLITE_BUSY, which Scribe treats as the database being down.
 */
export function sqliteFaults(path: string): DatabaseFaults {
  let holder: sqlite3.Database | undefined;
  return {
    get isDown() {
      return holder !== undefined;
    },
    async databaseDown() {
      if (holder) return;
      const database = await open(path);
      const deadline = Date.now() + LOCK_DEADLINE_MS;
      for (;;) {
        try {
          await exec(database, 'BEGIN EXCLUSIVE');
          break;
        } catch (error) {
          if (Date.now() >= deadline || !isBusy(error)) {
            await close(database);
            throw new Error(`the kit could not take the SQLite write lock: ${String(error)}`);
          }
          await new Promise((resolveDelay) => setTimeout(resolveDelay, LOCK_RETRY_MS));
        }
      }
      holder = database;
    },
    async databaseUp() {
      const database = holder;
      if (!database) return;
      holder = undefined;
      await exec(database, 'COMMIT');
      await close(database);
    },
  };
}

/** PostgreSQL behind the kit's proxy: down cuts every connection and refuses new ones. */
export function proxyFaults(proxy: TcpProxy): DatabaseFaults {
  let down = false;
  return {
    get isDown() {
      return down;
    },
    databaseDown() {
      down = true;
      proxy.cut();
      return Promise.resolve();
    },
    databaseUp() {
      down = false;
      proxy.restore();
      return Promise.resolve();
    },
  };
}

/** For a database the kit cannot put down (PostgreSQL given with `faults: false`). */
export function noFaults(why: string): DatabaseFaults {
  const refuse = () => Promise.reject(new Error(`database faults are off: ${why}`));
  return { isDown: false, databaseDown: refuse, databaseUp: refuse };
}

function open(path: string): Promise<sqlite3.Database> {
  return new Promise((resolveOpen, rejectOpen) => {
    const database = new sqlite3.Database(path, (error) => {
      if (error) return rejectOpen(error);
      database.configure('busyTimeout', 0);
      resolveOpen(database);
    });
  });
}

function exec(database: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolveRun, rejectRun) =>
    database.exec(sql, (error) => (error ? rejectRun(error) : resolveRun())),
  );
}

function close(database: sqlite3.Database): Promise<void> {
  return new Promise((resolveClose, rejectClose) =>
    database.close((error) => (error ? rejectClose(error) : resolveClose())),
  );
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}
