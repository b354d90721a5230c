// The limit under Scribe's SQLite writes: the driver alone inserting rows into the very schema
// the server migrated (same indexes, pragmas and foreign keys), in multi-row statements inside
// large transactions, with nothing of Scribe's around it.
import { copyFile, rm } from 'node:fs/promises';
import sqlite3 from 'sqlite3';
import { insertRate } from './raw-inserts.js';

/**
 * A connection to a copy of `databaseFile` (which the server created and left closed), with
 * the server's pragmas. `insertRate(records, options)` answers rows per second (see
 * raw-inserts.js for the options); the copy keeps what earlier calls inserted, as the server's
 * file does, until `close()` removes it.
 */
export async function openRawSqlite(databaseFile, { synchronous = 'FULL' } = {}) {
  const copy = `${databaseFile}.raw-bench`;
  await copyFile(databaseFile, copy);
  const db = new sqlite3.Database(copy);
  const execute = (sql, values) =>
    new Promise((resolve, reject) => db.run(sql, values, (e) => (e ? reject(e) : resolve())));
  await new Promise((resolve, reject) =>
    db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768;`,
      (e) => (e ? reject(e) : resolve()),
    ),
  );
  return {
    insertRate: (records, options) => insertRate(execute, 'sqlite', records, options),
    async close() {
      await new Promise((resolve) => db.close(resolve));
      for (const suffix of ['', '-wal', '-shm']) await rm(`${copy}${suffix}`, { force: true });
    },
  };
}

/** Rows per second the driver inserts `records` into a fresh copy of `databaseFile`. */
export async function rawSqliteInsertRate(databaseFile, records, options) {
  const raw = await openRawSqlite(databaseFile);
  try {
    return await raw.insertRate(records, options);
  } finally {
    await raw.close();
  }
}
