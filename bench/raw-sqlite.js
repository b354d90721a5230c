// The limit under Scribe's SQLite writes: the driver alone inserting rows into the very schema
// the server migrated (same indexes, pragmas and foreign keys), in multi-row statements inside
// large transactions, with nothing of Scribe's around it.
import { copyFile, rm } from 'node:fs/promises';
import sqlite3 from 'sqlite3';

const ROWS_PER_STATEMENT = 2000;
const ROWS_PER_TRANSACTION = 10_000;
const COLUMNS =
  '"id", "session_id", "order_key", "role", "content", "client_message_id", "accepted_at", "stored_at"';

/**
 * Rows per second the driver inserts `records` (message records, sessions created first) into
 * a copy of `databaseFile`, which the server created and left closed.
 */
export async function rawSqliteInsertRate(databaseFile, records) {
  const copy = `${databaseFile}.raw-bench`;
  await copyFile(databaseFile, copy);
  const db = new sqlite3.Database(copy);
  const exec = (sql) =>
    new Promise((resolve, reject) => db.exec(sql, (e) => (e ? reject(e) : resolve())));
  const run = (sql, values) =>
    new Promise((resolve, reject) => db.run(sql, values, (e) => (e ? reject(e) : resolve())));
  try {
    await exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768;',
    );
    const started = performance.now();
    for (let start = 0; start < records.length; start += ROWS_PER_TRANSACTION) {
      const transaction = records.slice(start, start + ROWS_PER_TRANSACTION);
      await exec('BEGIN IMMEDIATE');
      const sessions = [...new Set(transaction.map((record) => record.sessionId))];
      await run(
        `INSERT INTO "sessions" ("id", "created_at", "updated_at") VALUES ${sessions.map(() => '(?, 0, 0)').join(', ')} ON CONFLICT DO NOTHING`,
        sessions,
      );
      for (let first = 0; first < transaction.length; first += ROWS_PER_STATEMENT) {
        const chunk = transaction.slice(first, first + ROWS_PER_STATEMENT);
        const values = [];
        for (const r of chunk) {
          values.push(
            r.id,
            r.sessionId,
            r.orderKey,
            r.role,
            r.content,
            r.clientMessageId,
            r.acceptedAt,
          );
        }
        await run(
          `INSERT INTO "messages" (${COLUMNS}) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, 0)').join(', ')}`,
          values,
        );
      }
      await exec('COMMIT');
    }
    return records.length / ((performance.now() - started) / 1000);
  } finally {
    await new Promise((resolve) => db.close(resolve));
    for (const suffix of ['', '-wal', '-shm']) await rm(`${copy}${suffix}`, { force: true });
  }
}
