import { join } from 'node:path';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import { type StoredMessage, type StoredTranscripts } from './crash-checker.js';
import { holdSqliteLock, type Cleanups, type SqliteLockHolder } from './fault-helpers.js';
import { proxiedPostgresSchema } from './tcp-proxy.js';

// The transcript order is the order the server reads in: by order key, in the database's own
// collation.
const MESSAGES = `SELECT id, session_id, client_message_id, content, order_key FROM messages
  ORDER BY session_id, order_key, id`;
const SESSIONS = 'SELECT id, message_count FROM sessions ORDER BY id';

type Row = Record<string, string | number | null>;

/** What a SQLite database file holds, read through a read-only connection of the test's own. */
export async function readSqliteTranscripts(path: string): Promise<StoredTranscripts> {
  const database = await new Promise<sqlite3.Database>((resolve, reject) => {
    const opened = new sqlite3.Database(path, sqlite3.OPEN_READONLY, (error) =>
      error ? reject(error) : resolve(opened),
    );
  });
  const all = (sql: string) =>
    new Promise<Row[]>((resolve, reject) =>
      database.all(sql, (error, rows: Row[]) => (error ? reject(error) : resolve(rows))),
    );
  try {
    // One read transaction: both tables as of one commit.
    await new Promise<void>((resolve, reject) =>
      database.exec('BEGIN', (error) => (error ? reject(error) : resolve())),
    );
    return transcriptsOf(await all(MESSAGES), await all(SESSIONS));
  } finally {
    await new Promise<void>((resolve) => database.close(() => resolve()));
  }
}

/** What a PostgreSQL schema holds (`url` selects it with a search_path), around any proxy. */
export async function readPostgresTranscripts(url: string): Promise<StoredTranscripts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const messages = await client.query<Row>(MESSAGES);
    const sessions = await client.query<Row>(SESSIONS);
    await client.query('COMMIT');
    return transcriptsOf(messages.rows, sessions.rows);
  } finally {
    await client.end();
  }
}

function transcriptsOf(messages: Row[], sessions: Row[]): StoredTranscripts {
  return {
    messages: messages.map((row): StoredMessage => ({
      id: String(row.id),
      sessionId: String(row.session_id),
      clientMessageId: row.client_message_id === null ? null : String(row.client_message_id),
      content: String(row.content),
      orderKey: String(row.order_key),
    })),
    sessions: sessions.map((row) => ({
      id: String(row.id),
      messageCount: Number(row.message_count),
    })),
  };
}

/** The database of one crash run: how to read it, and how to make it fail and come back. */
export interface CrashDatabase {
  /** What the server needs to reach it (nothing for SQLite in DATA_DIR). */
  env: Record<string, string>;
  read(): Promise<StoredTranscripts>;
  /** Writes fail once this resolves: another process holds the SQLite lock, or the proxy is cut. */
  beginOutage(): Promise<void>;
  /** Writes can commit again (once a beginning outage has begun); nothing when there is none. */
  endOutage(): Promise<void>;
}

/** SQLite in `dataDir`; an outage is another process holding its write lock. */
export function sqliteCrashDatabase(dataDir: string, cleanups: Cleanups): CrashDatabase {
  const file = join(dataDir, 'scribe.sqlite');
  let holder: Promise<SqliteLockHolder> | null = null;
  return {
    env: {},
    read: () => readSqliteTranscripts(file),
    beginOutage() {
      const locking = holdSqliteLock(file);
      holder = locking;
      cleanups.add(async () => (await locking.catch(() => null))?.kill());
      return locking.then(() => undefined);
    },
    async endOutage() {
      const locking = holder;
      holder = null;
      // An outage begun from an answer's callback may still be taking the lock.
      await (await locking)?.release();
    },
  };
}

/**
 * A schema of its own on the test PostgreSQL, reached through a TCP proxy; an outage is the
 * proxy cutting every connection and refusing new ones. Reads go around the proxy.
 */
export async function postgresCrashDatabase(cleanups: Cleanups): Promise<CrashDatabase> {
  const { proxy, url, directUrl } = await proxiedPostgresSchema(cleanups);
  return {
    env: { DATABASE_URL: url },
    read: () => readPostgresTranscripts(directUrl),
    beginOutage: () => Promise.resolve(proxy.cut()),
    endOutage: () => Promise.resolve(proxy.restore()),
  };
}
