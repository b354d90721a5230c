import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import request from 'supertest';
import { appendMessage, eventually, faultSuite, metricValue } from './support/fault-helpers.js';
import { TEST_DATABASE_URL } from './support/databases.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';
import { type ServerProcess } from './support/server-process.js';

// Issue 21, item 4: /health/live and /health/ready, and the JSON answer during a shutdown, on
// real server processes with real faults (another process holding the SQLite write lock, a
// spool directory that cannot be made, a blackholed PostgreSQL, SIGTERM).
const TEST_TIMEOUT_MS = 60_000;

const { cleanups, faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS, {
  DB_RETRY_INTERVAL_MS: '200',
});

/** The heartbeat rows in the SQLite database of `dataDir` (each /health probe commits one). */
async function heartbeats(dataDir: string): Promise<number> {
  const database = await new Promise<sqlite3.Database>((resolveOpen, rejectOpen) => {
    const opened = new sqlite3.Database(
      join(dataDir, 'scribe.sqlite'),
      sqlite3.OPEN_READONLY,
      (error) => (error ? rejectOpen(error) : resolveOpen(opened)),
    );
  });
  try {
    return await new Promise<number>((resolveGet, rejectGet) =>
      database.get('SELECT count(*) AS n FROM "scribe_heartbeat"', (error, row: { n: number }) =>
        error ? rejectGet(error) : resolveGet(row.n),
      ),
    );
  } finally {
    await new Promise<void>((resolveClose) => database.close(() => resolveClose()));
  }
}

async function ready(target: ServerProcess): Promise<{ http: number; body: unknown }> {
  const response = await target.get('/health/ready');
  return { http: response.status, body: response.body };
}

describe('/health/live and /health/ready', () => {
  faultTest('answer 200 on a healthy instance, and commit no heartbeat row', async () => {
    const dataDir = await dataDirectory();
    // The idle probe (DB_IDLE_PROBE_MS) commits one of its own every 10 s: off, so that any
    // row here would be the probes'.
    const target = await server({ DATA_DIR: dataDir, DB_IDLE_PROBE_MS: '0' });
    const live = await target.get('/health/live');
    expect([live.status, live.body]).toEqual([200, { status: 'ok' }]);
    for (let probe = 0; probe < 3; probe++) {
      expect(await ready(target)).toEqual({
        http: 200,
        body: { status: 'ready', database: 'up', journal: 'up' },
      });
    }
    expect(await heartbeats(dataDir)).toBe(0);
    // The control: /health, as documented, proves a commit with one.
    expect((await target.get('/health')).status).toBe(200);
    expect(await heartbeats(dataDir)).toBe(1);
    // Scribe's routes: its HTTP steps stand on them (an unknown path is another matter).
    expect((await target.get('/health/live/x')).status).toBe(404);
  });

  faultTest(
    'stays ready through the journal while another process holds the database',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir });
      const holder = await lockDatabase(dataDir);
      expect((await appendMessage(target, 'locked', 'one')).status).toBe('QUEUED');
      // Known down from that write: the probe below needs no write of its own to say so.
      expect(metricValue((await target.get('/metrics')).text, 'scribe_database_up')).toBe(0);
      for (let probe = 0; probe < 5; probe++) {
        expect({ probe, ...(await ready(target)) }).toEqual({
          probe,
          http: 200,
          body: { status: 'ready', database: 'down', journal: 'up' },
        });
      }
      await holder.release();
      await eventually(async () =>
        expect(await ready(target)).toEqual({
          http: 200,
          body: { status: 'ready', database: 'up', journal: 'up' },
        }),
      );
    },
  );

  faultTest(
    'tells an outage no write has met: an idle instance probes the database itself',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir, DB_IDLE_PROBE_MS: '500' });
      expect((await appendMessage(target, 'idle', 'one')).status).toBe('PERSISTED');
      const holder = await lockDatabase(dataDir);
      // No append comes: only the idle probe can find the database locked.
      await eventually(async () =>
        expect(await ready(target)).toEqual({
          http: 200,
          body: { status: 'ready', database: 'down', journal: 'up' },
        }),
      );
      expect(metricValue((await target.get('/metrics')).text, 'scribe_database_up')).toBe(0);
      // The probe logs as it finds the database down, on a pipe the answers can overtake.
      await target.waitForOutput(/ERROR \[DatabaseHealth\] Database not writable \(SQLITE_BUSY/);
      await holder.release();
      await eventually(async () =>
        expect(metricValue((await target.get('/metrics')).text, 'scribe_database_up')).toBe(1),
      );
      expect((await ready(target)).body).toMatchObject({ database: 'up' });
      expect(await heartbeats(dataDir)).toBe(1);
    },
  );

  faultTest(
    'answers 503 while neither the database nor the journal takes a write, and 200 once one does',
    async () => {
      const dataDir = await dataDirectory();
      const blocker = join(dataDir, 'not-a-directory');
      await writeFile(blocker, 'a regular file where the spool directory should be\n');
      const target = await server({ DATA_DIR: dataDir, SPOOL_DIR: join(blocker, 'spool') });
      // The journal is unusable from the start, the database takes the writes.
      expect(await ready(target)).toEqual({
        http: 200,
        body: { status: 'ready', database: 'up', journal: 'down' },
      });
      const holder = await lockDatabase(dataDir);
      expect((await appendMessage(target, 'nowhere', 'one')).status).toBe('BUFFERED');
      expect(await ready(target)).toEqual({
        http: 503,
        body: { status: 'unavailable', database: 'down', journal: 'down' },
      });
      await holder.release();
      await eventually(async () => expect((await ready(target)).http).toBe(200));
    },
  );
});

describe('SIGTERM with an append in flight', () => {
  const postgres = TEST_DATABASE_URL ? it : it.skip;

  postgres(
    'lets the append finish, and answers new GraphQL requests 503 with a JSON SERVICE_UNAVAILABLE error',
    () =>
      cleanups.guard(async () => {
        const { proxy, url } = await proxiedPostgresSchema(cleanups);
        const target = await server({ DATA_DIR: await dataDirectory(), DATABASE_URL: url });
        expect((await appendMessage(target, 'drain', 'before')).status).toBe('PERSISTED');

        // The database goes silent: the next append's write waits on it, in flight.
        proxy.blackhole();
        const events: string[] = [];
        const inFlight = appendMessage(target, 'drain', 'in flight').then((answer) => {
          events.push('append answered');
          return answer;
        });
        await eventually(async () =>
          expect(metricValue((await target.get('/metrics')).text, 'scribe_appends_in_flight')).toBe(
            1,
          ),
        );
        const ended = target.stop('SIGTERM');

        const refused = await eventually(async () => {
          const response = await request(target.url)
            .post('/graphql')
            .set('content-type', 'application/json')
            .send({ query: '{ __typename }' });
          expect(response.status).toBe(503);
          return response;
        });
        events.push('new request refused');
        expect(refused.headers['content-type']).toMatch(/^application\/json/);
        expect(refused.body).toEqual({
          errors: [
            {
              message: expect.stringContaining('shutting down') as string,
              extensions: { code: 'SERVICE_UNAVAILABLE' },
            },
          ],
        });
        const readiness = await target.get('/health/ready');
        expect([readiness.status, readiness.body.status]).toEqual([503, 'shutting_down']);

        // The database answers again (its silent connections reset): the append finishes.
        proxy.restore();
        expect((await inFlight).status).toMatch(/^(PERSISTED|QUEUED)$/);
        expect(events).toEqual(['new request refused', 'append answered']);
        expect(await ended).toEqual({ code: null, signal: 'SIGTERM' });
        expect(target.output()).toContain('Shutting down: waited for 1 in-flight append(s)');
      }),
    TEST_TIMEOUT_MS,
  );
});

describe('a source past its refusal budget', () => {
  faultTest('is turned away (429) everywhere but the health probes and /metrics', async () => {
    const target = await server({ DATA_DIR: await dataDirectory(), MAX_REFUSALS_PER_MINUTE: '3' });
    for (let refused = 0; refused < 5; refused++) await target.get('/nope');
    expect((await target.get('/nope')).status).toBe(429);
    expect((await target.get('/graphql?query=%7B__typename%7D')).status).toBe(429);
    for (const path of ['/health/live', '/health/ready', '/health', '/metrics']) {
      expect({ path, status: (await target.get(path)).status }).toEqual({ path, status: 200 });
    }
  });
});
