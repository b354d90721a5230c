import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { databaseKinds } from './support/databases.js';
import {
  READ,
  appendMessage,
  eventually,
  faultSuite,
  occurrences,
  readJournal,
  readTranscript,
} from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// Issue 19, finding 8: with PostgreSQL unreachable at start the instance used to exit after
// TypeORM's retries. It must start, journal, say the database is down, and connect, migrate
// and write back in the background once PostgreSQL answers.
const TEST_TIMEOUT_MS = 60_000;
const CAP = 3;
const SESSION = 'started-in-outage';
const WAITING = 'Database not connected and migrated at start';
const CONNECTED = /Database connected and migrated after (\d+) attempt\(s\)/;

async function appendQueued(target: ServerProcess, contents: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const content of contents) {
    const answer = await appendMessage(target, SESSION, content);
    expect({ content, status: answer.status }).toEqual({ content, status: 'QUEUED' });
    ids.push(answer.id);
  }
  return ids;
}

const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

describeOnPostgres('a start while PostgreSQL is unreachable', () => {
  const { cleanups, faultTest, dataDirectory, server } = faultSuite(TEST_TIMEOUT_MS);

  /** A schema behind a proxy that is cut before the server starts, and direct reads of it. */
  async function cutDatabase() {
    const { proxy, url, directUrl } = await proxiedPostgresSchema(cleanups);
    proxy.cut();
    const direct = async <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) => {
      const client = new pg.Client({ connectionString: directUrl });
      await client.connect();
      try {
        return (await client.query<T>(sql, values)).rows;
      } finally {
        await client.end();
      }
    };
    // Straight to the database, around the proxy: what is stored, each id once or more.
    const storedIds = async () =>
      (
        await direct<{ id: string }>(
          'SELECT id FROM messages WHERE session_id = $1 ORDER BY order_key',
          [SESSION],
        )
      ).map((row) => row.id);
    const migrated = async () =>
      (await direct<{ found: string | null }>(`SELECT to_regclass('messages')::text AS found`))[0]
        .found !== null;
    return { proxy, url, storedIds, migrated };
  }

  async function expectDatabaseDown(target: ServerProcess): Promise<void> {
    const health = await target.get('/health');
    expect({ status: health.status, body: health.body.status }).toEqual({
      status: 200,
      body: 'degraded',
    });
    expect(health.body.details.database.status).toBe('down');
    expect(health.body.details.spool.status).toBe('up');
  }

  faultTest(
    'starts, journals appends QUEUED and reports the database down; once PostgreSQL answers it migrates and stores each message once, in order',
    async () => {
      const dataDir = await dataDirectory();
      const { proxy, url, storedIds, migrated } = await cutDatabase();
      const target = await server({
        DATA_DIR: dataDir,
        DATABASE_URL: url,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      });
      expect(occurrences(target.output(), WAITING)).toBe(1);
      expect(await migrated()).toBe(false);

      const contents = Array.from({ length: CAP + 3 }, (_, index) => `queued-${index + 1}`);
      const ids = await appendQueued(target, contents);
      expect((await readJournal(join(dataDir, 'pending_messages'))).map((line) => line.id)).toEqual(
        ids,
      );
      await expectDatabaseDown(target);
      // A read needs the database: a clear code, never a fault.
      const read = await target.gql(READ, { id: SESSION });
      expect(read.status).toBe(200);
      expect(read.errors?.map((error: any) => error.extensions?.code)).toEqual([
        'DATABASE_UNAVAILABLE',
      ]);
      // Waiting is one line, not one per retry (the retries run every 200 ms).
      await eventually(() => expect(proxy.refused).toBeGreaterThan(3));
      expect(occurrences(target.output(), WAITING)).toBe(1);
      expect(await migrated()).toBe(false);

      proxy.restore();

      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.ids).toEqual(ids);
        expect(stored.contents).toEqual(contents);
        expect(stored.messageCount).toBe(contents.length);
      }, 15_000);
      expect(await storedIds()).toEqual(ids);
      expect((await readJournal(join(dataDir, 'pending_messages'))).segments).toEqual([]);
      // Retried in the background (the proxy's refusals count the feed's attempts too, so the
      // start's own attempts are fewer on a loaded machine). Logged as the database answers, on
      // a pipe the reads above can overtake: waited for.
      await target.waitForOutput(CONNECTED);
      expect(Number(CONNECTED.exec(target.output())?.[1])).toBeGreaterThan(1);
      expect(occurrences(target.output(), CONNECTED)).toBe(1);
      const health = await target.get('/health');
      expect({ status: health.status, body: health.body.status }).toEqual({
        status: 200,
        body: 'ok',
      });
      const later = await appendMessage(target, SESSION, 'after');
      expect(later.status).toBe('PERSISTED');
      expect(await storedIds()).toEqual([...ids, later.id]);
    },
  );

  faultTest(
    'kill -9 while waiting for PostgreSQL loses nothing: a start with it up stores every message once, in order',
    async () => {
      const dataDir = await dataDirectory();
      const { proxy, url, storedIds } = await cutDatabase();
      const env = {
        DATA_DIR: dataDir,
        DATABASE_URL: url,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      };
      const first = await server(env);
      const contents = Array.from({ length: CAP + 2 }, (_, index) => `killed-${index + 1}`);
      const ids = await appendQueued(first, contents);
      await expectDatabaseDown(first);
      expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

      proxy.restore();
      const restarted = await server(env);
      expect(occurrences(restarted.output(), WAITING)).toBe(0);
      await eventually(async () => {
        const stored = await readTranscript(restarted, SESSION);
        expect(stored.ids).toEqual(ids);
        expect(stored.contents).toEqual(contents);
      }, 15_000);
      expect(await storedIds()).toEqual(ids);
      expect((await readJournal(join(dataDir, 'pending_messages'))).segments).toEqual([]);
    },
  );
});

describe('a start while another process holds the SQLite database locked', () => {
  const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS);

  faultTest(
    'starts and journals appends QUEUED; once the lock is released it migrates and stores each message once, in order',
    async () => {
      const dataDir = await dataDirectory();
      // A database not migrated yet (an empty file), locked by a competing writer.
      await writeFile(join(dataDir, 'scribe.sqlite'), '');
      const holder = await lockDatabase(dataDir);
      const target = await server({ DATA_DIR: dataDir, DB_RETRY_INTERVAL_MS: '200' });
      expect(occurrences(target.output(), WAITING)).toBe(1);

      const contents = ['locked-1', 'locked-2', 'locked-3'];
      const ids = await appendQueued(target, contents);
      const health = await target.get('/health');
      expect(health.status).toBe(200);
      expect(health.body.details.database.status).toBe('down');
      expect(health.body.details.spool.status).toBe('up');

      await holder.release();

      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.ids).toEqual(ids);
        expect(stored.contents).toEqual(contents);
        expect(stored.messageCount).toBe(contents.length);
      }, 15_000);
      expect((await readJournal(join(dataDir, 'pending_messages'))).segments).toEqual([]);
      // Logged as the database answers, on a pipe the reads above can overtake: waited for.
      await target.waitForOutput(CONNECTED);
      expect(occurrences(target.output(), CONNECTED)).toBe(1);
    },
  );
});
