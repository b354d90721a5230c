// Holds the write lock of a SQLite database from another process, as a real competing writer
// (a migration, a backup tool, a second instance) would.
//
//   node test/support/sqlite-lock-holder.js <database file>
//
// Opens the file, takes `BEGIN EXCLUSIVE` without waiting on anyone (busy_timeout 0, retried
// for a bounded time while the server itself is mid-write), prints LOCKED, then holds the lock
// until a line RELEASE arrives on stdin, stdin closes or SIGTERM/SIGINT comes. Then it commits,
// closes the database, prints RELEASED and exits 0. Any failure is printed to stderr, exit 1.
import { createInterface } from 'node:readline';
import sqlite3 from 'sqlite3';

const LOCK_DEADLINE_MS = 5000;
const LOCK_RETRY_MS = 20;

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: sqlite-lock-holder.js <database file>\n');
  process.exit(2);
}

function fail(error) {
  process.stderr.write(`sqlite-lock-holder: ${error?.stack ?? String(error)}\n`);
  process.exit(1);
}

function run(db, sql) {
  return new Promise((resolve, reject) =>
    db.exec(sql, (error) => (error ? reject(error) : resolve())),
  );
}

function open(path) {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(path, sqlite3.OPEN_READWRITE, (error) =>
      error ? reject(error) : resolve(db),
    );
  });
}

function close(db) {
  return new Promise((resolve, reject) => db.close((error) => (error ? reject(error) : resolve())));
}

async function lock(db) {
  const deadline = Date.now() + LOCK_DEADLINE_MS;
  for (;;) {
    try {
      await run(db, 'BEGIN EXCLUSIVE');
      return;
    } catch (error) {
      if (error?.code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
  }
}

async function main() {
  const db = await open(file);
  await run(db, 'PRAGMA busy_timeout = 0');
  await lock(db);
  process.stdout.write('LOCKED\n');

  let releasing;
  const release = () => {
    releasing ??= (async () => {
      await run(db, 'COMMIT');
      await close(db);
      process.stdout.write('RELEASED\n');
      process.exit(0);
    })().catch(fail);
    return releasing;
  };
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() === 'RELEASE') void release();
  });
  // The test process went away: never keep the database locked behind its back.
  lines.on('close', () => void release());
  process.on('SIGTERM', () => void release());
  process.on('SIGINT', () => void release());
}

main().catch(fail);
