// PostgreSQL for the bench: a database of its own for each run (the bench never touches other
// data), and the driver alone inserting rows into the schema Scribe migrated there, the limit
// under Scribe's PostgreSQL writes.
import pg from 'pg';
import { insertRate } from './raw-inserts.js';

export const DEFAULT_BENCH_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/** The URL without its password, to print. */
export function shown(url) {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/**
 * Creates an empty database `scribe_bench_<pid>` on the server of `baseUrl` (connecting as its
 * URL says); `drop()` removes it. Rejects when the server cannot be reached.
 */
export async function freshPostgresDatabase(baseUrl) {
  const name = `scribe_bench_${process.pid}`;
  const admin = async (sql) => {
    const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 3000 });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`DROP DATABASE IF EXISTS "${name}"`);
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    // FORCE: a connection a stopped server left behind must not keep the database alive.
    drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

/**
 * Runs `work(url)` on a fresh database of the bench's PostgreSQL (BENCH_DATABASE_URL), dropped
 * after; when none can be created, says why under `label` and answers `skipped`.
 */
export async function onFreshPostgres(label, work, skipped) {
  const baseUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_BENCH_DATABASE_URL;
  let database;
  try {
    database = await freshPostgresDatabase(baseUrl);
  } catch (error) {
    console.log(
      `\n${label}, PostgreSQL: skipped, no database could be created on ${shown(baseUrl)} (${error.message || error.code}); BENCH_DATABASE_URL names the server to use`,
    );
    return skipped;
  }
  try {
    return await work(database.url);
  } finally {
    await database.drop();
  }
}

/** One driver connection to `url`; `insertRate(records, options)` as in raw-inserts.js. */
export async function openRawPostgres(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    insertRate: (records, options) =>
      insertRate((sql, values) => client.query(sql, values), 'postgres', records, options),
    close: () => client.end(),
  };
}
