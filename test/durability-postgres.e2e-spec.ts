import { join } from 'node:path';
import pg from 'pg';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import {
  APPEND,
  faultSuite,
  appendMessage,
  eventually,
  occurrences,
  readJournal,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import { temporaryDataDir, type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';
import { type TcpProxy } from '../src/kit/tcp-proxy.js';

// A PostgreSQL outage made real: the server reaches the database only through a TCP proxy in
// this process, and cut() drops every connection and refuses new ones until restore().
const TEST_TIMEOUT_MS = 30_000;
const CAP = 4;
const SESSION = 'pg-outage';

// databaseKinds() says once, on stderr, why PostgreSQL is left out.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

describeOnPostgres('durability of acknowledged appends across a PostgreSQL outage', () => {
  const { cleanups, faultTest, server } = faultSuite(TEST_TIMEOUT_MS);

  /** A schema of its own, a proxy in front of the test server, and a URL through the proxy. */
  async function proxiedDatabase(): Promise<{
    proxy: TcpProxy;
    url: string;
    storedDirectly: (sessionId: string) => Promise<string[]>;
  }> {
    const { proxy, url, directUrl } = await proxiedPostgresSchema(cleanups);
    // Straight to the database, around the proxy: what is stored, whatever the outage.
    const storedDirectly = async (sessionId: string) => {
      const client = new pg.Client({ connectionString: directUrl });
      await client.connect();
      try {
        const result = await client.query<{ content: string }>(
          'SELECT content FROM messages WHERE session_id = $1 ORDER BY order_key',
          [sessionId],
        );
        return result.rows.map((row) => row.content);
      } finally {
        await client.end();
      }
    };
    return { proxy, url, storedDirectly };
  }

  /** A server on a schema of its own (its URL, to reach the rows around the server). */
  async function serverOnOwnSchema(): Promise<{ target: ServerProcess; url: string }> {
    const dataDir = await temporaryDataDir();
    cleanups.add(dataDir.remove);
    const schema = await createPostgresSchema();
    cleanups.add(schema.drop);
    const target = await server({
      DATA_DIR: dataDir.path,
      DATABASE_URL: schema.url,
      MAX_PENDING_PER_SESSION: String(CAP),
      DB_RETRY_INTERVAL_MS: '200',
    });
    return { target, url: schema.url };
  }

  /**
   * SESSION's row locked by another client in an open transaction (another instance's long
   * transaction, an operator's session); `blockedBy()` lists the backends waiting on it (only
   * `pid`, when given), `release()` rolls it back.
   */
  async function lockSessionRow(url: string) {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    cleanups.add(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [SESSION]);
    return {
      blockedBy: async (pid?: number) =>
        (
          await holder.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity
             WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid)) AND ($1::int IS NULL OR pid = $1)`,
            [pid ?? null],
          )
        ).rows,
      release: () => holder.query('ROLLBACK'),
    };
  }

  async function appendAll(
    target: ServerProcess,
    contents: string[],
    status: AppendStatus,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (const content of contents) {
      const answer = await appendMessage(target, SESSION, content);
      expect({ content, status: answer.status }).toEqual({ content, status });
      ids.push(answer.id);
    }
    return ids;
  }

  /** Stored `before`, then the cut and CAP + 3 appends QUEUED, all journaled, the 3 oldest out of memory. */
  async function queueAndSpoolDuringCut(env: Record<string, string>, proxy: TcpProxy) {
    const spoolDir = join(env.DATA_DIR, 'pending_messages');
    const target = await server(env);
    const before = ['before-1', 'before-2'];
    const beforeIds = await appendAll(target, before, 'PERSISTED');

    proxy.cut();
    const cut = Array.from({ length: CAP + 3 }, (_, index) => `cut-${index + 1}`);
    const cutIds = await appendAll(target, cut, 'QUEUED');

    const journal = await readJournal(spoolDir);
    expect(journal.map((line) => [line.id, line.content])).toEqual(
      cut.map((content, index) => [cutIds[index], content]),
    );
    // Printed while the answers go out: the last is waited for, and the lines come in order.
    await target.waitForOutput(`(message ${cutIds[2]})`);
    expect(occurrences(target.output(), 'spooled oldest message')).toBe(3);
    const health = await target.get('/health');
    expect(health.status).toBe(200);
    expect(health.body.details.database.status).toBe('down');
    expect(health.body.details.spool.status).toBe('up');
    expect(proxy.refused).toBeGreaterThan(0);
    return { target, spoolDir, before, sent: [...before, ...cut], ids: [...beforeIds, ...cutIds] };
  }

  faultTest(
    'stores every queued and spooled message in send order once the database is reachable again (background retry)',
    async () => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      const { proxy, url, storedDirectly } = await proxiedDatabase();
      const { target, spoolDir, before, sent, ids } = await queueAndSpoolDuringCut(
        {
          DATA_DIR: dataDir.path,
          DATABASE_URL: url,
          MAX_PENDING_PER_SESSION: String(CAP),
          DB_RETRY_INTERVAL_MS: '200',
        },
        proxy,
      );
      expect(await storedDirectly(SESSION)).toEqual(before);

      proxy.restore();

      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.contents).toEqual(sent);
        expect(stored.ids).toEqual(ids);
        expect(stored.messageCount).toBe(sent.length);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      }, 10_000);
      expect(await storedDirectly(SESSION)).toEqual(sent);
    },
  );

  faultTest(
    'SIGTERM during the outage leaves the journal, and a start after it replays it all in send order',
    async () => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      const { proxy, url, storedDirectly } = await proxiedDatabase();
      const env = {
        DATA_DIR: dataDir.path,
        DATABASE_URL: url,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      };
      const { target, spoolDir, before, sent, ids } = await queueAndSpoolDuringCut(env, proxy);

      expect(await target.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });
      expect(target.output()).toContain(
        `Shutdown: ${CAP} pending message(s) left in the journal at ${spoolDir}`,
      );
      expect((await readJournal(spoolDir)).map((line) => line.id)).toEqual(
        ids.slice(before.length),
      );
      expect(await storedDirectly(SESSION)).toEqual(before);

      proxy.restore();
      const restarted = await server(env);
      await eventually(async () => {
        const stored = await readTranscript(restarted, SESSION);
        expect(stored.contents).toEqual(sent);
        expect(stored.ids).toEqual(ids);
        expect(stored.messageCount).toBe(sent.length);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      });
    },
  );

  // A session's row locked elsewhere (another instance's long transaction, an operator's
  // session): the append waits out the write's timeout and is journaled, and PostgreSQL itself
  // gives up the writer's statement, rather than keep a backend waiting behind the lock.
  faultTest(
    'an append that waits out a row lock held elsewhere is QUEUED, and leaves no statement waiting',
    async () => {
      const { target, url } = await serverOnOwnSchema();
      expect((await appendMessage(target, SESSION, 'before')).status).toBe('PERSISTED');
      const { blockedBy, release } = await lockSessionRow(url);

      const answered = appendMessage(target, SESSION, 'during');
      const writer = await eventually(async () => {
        const rows = await blockedBy();
        expect(rows).toHaveLength(1);
        return rows[0].pid;
      });

      expect((await answered).status).toBe('QUEUED');
      expect(await blockedBy(writer)).toEqual([]);
      await release();
      await eventually(async () =>
        expect((await readTranscript(target, SESSION)).contents).toEqual(['before', 'during']),
      );
    },
  );

  // The write path has more than one write connection: a transaction stuck behind one
  // session's row lock leaves the others free for the writes of other sessions.
  faultTest(
    "a write waiting on one session's row lock does not hold back other sessions' writes",
    async () => {
      const { target, url } = await serverOnOwnSchema();
      expect((await appendMessage(target, SESSION, 'before')).status).toBe('PERSISTED');
      const { blockedBy, release } = await lockSessionRow(url);

      const answered = appendMessage(target, SESSION, 'during');
      await eventually(async () => expect(await blockedBy()).toHaveLength(1));
      const other = await appendMessage(target, 'elsewhere', 'free');

      // Stored while the first write still waits on the lock.
      expect(other.status).toBe('PERSISTED');
      expect(await blockedBy()).toHaveLength(1);
      await release();
      expect(['PERSISTED', 'QUEUED']).toContain((await answered).status);
      await eventually(async () =>
        expect((await readTranscript(target, SESSION)).contents).toEqual(['before', 'during']),
      );
      expect((await readTranscript(target, 'elsewhere')).contents).toEqual(['free']);
    },
  );

  // Not an outage but a poison message: PostgreSQL cannot store U+0000 in a text column
  // (22021), so such an append must be refused up front or stored; and whatever happens to it,
  // other sessions must keep persisting while the database is up.
  faultTest(
    'a message PostgreSQL cannot store (a NUL character) is refused or stored, and never stalls the writes of other sessions',
    async () => {
      const { target } = await serverOnOwnSchema();
      const poison = 'bad\u0000byte';

      const answer = await target.gql(APPEND, {
        input: { sessionId: 'poison', role: 'USER', content: poison },
      });
      expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      const later = await appendMessage(target, 'poison', 'fine-0');
      const healthy = await appendMessage(target, 'healthy', 'fine-1');

      expect((await readTranscript(target, 'healthy')).contents).toEqual(['fine-1']);
      expect((await readTranscript(target, 'poison')).contents).toEqual(['fine-0']);
      expect([later.status, healthy.status]).toEqual(['PERSISTED', 'PERSISTED']);
    },
  );
});
