import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { databaseKinds, type DatabaseKind } from './support/databases.js';
import {
  appendMessage,
  eventually,
  occurrences,
  readJournal,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import { journalSuite, spoolStatusOf } from './support/journal-suite.js';
import { type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// Real processes on one SPOOL_DIR: the reproduction (A answers QUEUED during an outage
// of its database and is killed; B starts on the same spool with another database) and the
// case that must keep working (instances of one database take over each other's journals).
const TEST_TIMEOUT_MS = 120_000;
const SESSION = 'shared-spool';
const STATUS = `writable error messages databaseCheck databaseId instanceDatabaseId databaseCheckReason`;

const { cleanups, faultTest, dataDirectory, server, lockDatabase } = journalSuite(TEST_TIMEOUT_MS, {
  DB_RETRY_INTERVAL_MS: '200',
});

async function appendAll(
  target: ServerProcess,
  contents: string[],
  status: AppendStatus,
): Promise<void> {
  for (const content of contents) {
    const answer = await appendMessage(target, SESSION, content);
    expect({ content, status: answer.status }).toEqual({ content, status });
  }
}

function numbered(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index + 1}`);
}

/** The database id that database.id names (its first line; the second says where it was). */
async function spoolDatabaseId(spoolDir: string): Promise<string> {
  return (await readFile(join(spoolDir, 'database.id'), 'utf8')).split('\n')[0];
}

/**
 * A SQLite instance on `dataDir` and `spoolDir` that stores `before`, then answers `queued`
 * QUEUED under another process's write lock, and is killed -9 with them in the journal.
 */
async function queueAndKill(
  dataDir: string,
  spoolDir: string,
  before: string[],
  queued: string[],
): Promise<void> {
  const target = await server({ DATA_DIR: dataDir, SPOOL_DIR: spoolDir });
  await appendAll(target, before, 'PERSISTED');
  const holder = await lockDatabase(dataDir);
  await appendAll(target, queued, 'QUEUED');
  await target.stop('SIGKILL');
  await holder.release();
  const journal = await readJournal(spoolDir);
  expect(journal.filter((line) => queued.includes(line.content))).toHaveLength(queued.length);
}

/** B's database, and a way to make it unreachable (another process's lock, a cut proxy). */
async function otherDatabase(kind: DatabaseKind): Promise<{
  env: Record<string, string>;
  outage: () => Promise<() => Promise<void>>;
}> {
  const dataDir = await dataDirectory();
  if (kind === 'sqlite') {
    return {
      env: { DATA_DIR: dataDir },
      outage: async () => {
        const holder = await lockDatabase(dataDir);
        return () => holder.release();
      },
    };
  }
  const { proxy, url } = await proxiedPostgresSchema(cleanups);
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url },
    outage: async () => {
      proxy.cut();
      return async () => proxy.restore();
    },
  };
}

describe('one SPOOL_DIR shared by instances of two databases', () => {
  describe.each(databaseKinds())('B on %s', (kind) => {
    faultTest(
      "B refuses A's journal and journals nothing there; A's messages reach A's database when A restarts",
      async () => {
        const spoolDir = await dataDirectory();
        const dataA = await dataDirectory();
        const before = numbered('before', 2);
        const queued = numbered('queued', 10);
        await queueAndKill(dataA, spoolDir, before, queued);

        const other = await otherDatabase(kind);
        const b = await server({ ...other.env, SPOOL_DIR: spoolDir });
        // B's database holds nothing of A's session, and A's journal is still there.
        expect(await readTranscript(b, SESSION)).toEqual({
          messageCount: null,
          ids: [],
          contents: [],
        });
        expect((await readJournal(spoolDir)).map((line) => line.content)).toEqual(queued);

        // Said at start, in one line at ERROR, with both ids and the directory.
        const aId = await spoolDatabaseId(spoolDir);
        const status = await spoolStatusOf(b, STATUS);
        const bId = status.instanceDatabaseId as string;
        expect(bId).toMatch(/^[0-9a-f]{16}$/);
        expect(bId).not.toBe(aId);
        const refusal = `ERROR [Journal] Refusing the spool at ${spoolDir}: its database.id names database ${aId}, and this instance's database is ${bId}`;
        // On stderr, which the ready line (stdout) and the answers since do not wait for.
        await b.waitForOutput(refusal);
        expect(occurrences(b.output(), refusal)).toBe(1);
        expect(status).toEqual({
          writable: false,
          error: expect.stringContaining('the spool belongs to another database'),
          messages: 0,
          databaseCheck: 'REFUSED',
          databaseId: aId,
          instanceDatabaseId: bId,
          databaseCheckReason: `its database.id names database ${aId}, and this instance's database is ${bId} (a new database, not where the spool's database was; the spool holds 1 segment(s) of other instances)`,
        });
        const health = await b.get('/health');
        expect(health.status).toBe(200);
        expect(health.body.details.database.status).toBe('up');
        expect(health.body.details.spool).toEqual({
          status: 'down',
          code: 'SPOOL_OF_ANOTHER_DATABASE',
          blocked: 0,
        });

        // With its database down, B keeps what it cannot store in memory (BUFFERED), never in
        // a journal another database's instances would replay.
        await appendAll(b, ['b-stored'], 'PERSISTED');
        const restore = await other.outage();
        await appendAll(b, ['b-buffered'], 'BUFFERED');
        expect((await readJournal(spoolDir)).map((line) => line.content)).toEqual(queued);
        await restore();
        await eventually(async () => {
          expect((await readTranscript(b, SESSION)).contents).toEqual(['b-stored', 'b-buffered']);
        }, 15_000);
        await b.stop();

        const a = await server({ DATA_DIR: dataA, SPOOL_DIR: spoolDir });
        expect((await readTranscript(a, SESSION)).contents).toEqual([...before, ...queued]);
        await eventually(async () => {
          expect((await readJournal(spoolDir)).segments).toEqual([]);
        });
        expect(await spoolStatusOf(a, STATUS)).toMatchObject({
          databaseCheck: 'VERIFIED',
          databaseId: aId,
          instanceDatabaseId: aId,
        });
      },
    );
  });
});

describe('one SPOOL_DIR shared by instances of one database', () => {
  faultTest(
    "each takes over the other's journal, and claims a spool without database.id (written by an older Scribe)",
    async () => {
      const spoolDir = await dataDirectory();
      const dataDir = await dataDirectory();
      const first = numbered('a', 4);
      await queueAndKill(dataDir, spoolDir, ['a-stored'], first);
      const databaseId = await spoolDatabaseId(spoolDir);
      // As a spool of a Scribe that kept no database.id would be.
      await rm(join(spoolDir, 'database.id'));

      const b = await server({ DATA_DIR: dataDir, SPOOL_DIR: spoolDir });
      expect((await readTranscript(b, SESSION)).contents).toEqual(['a-stored', ...first]);
      expect(await readFile(join(spoolDir, 'database.id'), 'utf8')).toBe(
        `${databaseId}\nsqlite:${join(dataDir, 'scribe.sqlite')}\n`,
      );
      expect(b.output()).toContain(`The spool at ${spoolDir} claimed for database ${databaseId}`);
      const second = numbered('b', 4);
      const holder = await lockDatabase(dataDir);
      await appendAll(b, second, 'QUEUED');
      await b.stop('SIGKILL');
      await holder.release();

      const a = await server({ DATA_DIR: dataDir, SPOOL_DIR: spoolDir });
      expect((await readTranscript(a, SESSION)).contents).toEqual([
        'a-stored',
        ...first,
        ...second,
      ]);
      expect(a.output()).toContain(`The spool at ${spoolDir} belongs to database ${databaseId}`);
      expect(await spoolStatusOf(a, STATUS)).toMatchObject({
        writable: true,
        databaseCheck: 'VERIFIED',
        databaseId,
        instanceDatabaseId: databaseId,
        databaseCheckReason: null,
      });
      await eventually(async () => {
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      });
    },
  );
});

describe('a spool used before its database answered', () => {
  const sqliteAt = (dataDir: string) => `sqlite:${join(dataDir, 'scribe.sqlite')}`;

  /** A server on `dataDir` started while another process holds its (new) database locked. */
  async function startLocked(dataDir: string, spoolDir: string) {
    await writeFile(join(dataDir, 'scribe.sqlite'), '');
    const holder = await lockDatabase(dataDir);
    return { holder, target: await server({ DATA_DIR: dataDir, SPOOL_DIR: spoolDir }) };
  }

  faultTest(
    "is claimed provisionally: an instance of another database adopts none of it, and the first database's instance does",
    async () => {
      const spoolDir = await dataDirectory();
      const dataA = await dataDirectory();
      const { holder, target: a } = await startLocked(dataA, spoolDir);
      const queued = numbered('early', 5);
      await appendAll(a, queued, 'QUEUED');
      await a.stop('SIGKILL');
      await holder.release();
      expect(await readFile(join(spoolDir, 'database.id'), 'utf8')).toBe(
        `provisional\n${sqliteAt(dataA)}\n`,
      );

      const b = await server({ DATA_DIR: await dataDirectory(), SPOOL_DIR: spoolDir });
      expect((await readTranscript(b, SESSION)).contents).toEqual([]);
      expect((await readJournal(spoolDir)).map((line) => line.content)).toEqual(queued);
      expect(await spoolStatusOf(b, STATUS)).toMatchObject({
        databaseCheck: 'REFUSED',
        databaseId: 'provisional',
        databaseCheckReason: expect.stringContaining(
          `its database.id was written for the database at ${sqliteAt(dataA)} before that database answered`,
        ),
      });
      await b.stop();

      const restarted = await server({ DATA_DIR: dataA, SPOOL_DIR: spoolDir });
      expect((await readTranscript(restarted, SESSION)).contents).toEqual(queued);
      const status = await spoolStatusOf(restarted, STATUS);
      expect(status).toMatchObject({ databaseCheck: 'VERIFIED' });
      expect(await spoolDatabaseId(spoolDir)).toBe(status.instanceDatabaseId);
    },
  );

  faultTest(
    "is not journaled into by an instance whose database has not answered, when it is another database's",
    async () => {
      const spoolDir = await dataDirectory();
      const dataA = await dataDirectory();
      const a = await server({ DATA_DIR: dataA, SPOOL_DIR: spoolDir });
      await appendAll(a, ['a-stored'], 'PERSISTED');
      const aId = await spoolDatabaseId(spoolDir);

      const dataB = await dataDirectory();
      const { holder, target: b } = await startLocked(dataB, spoolDir);
      const buffered = numbered('b', 3);
      await appendAll(b, buffered, 'BUFFERED');
      const reason = `its database.id names database ${aId} at ${sqliteAt(dataA)}, and this instance's database, at ${sqliteAt(dataB)}, has not answered yet: nothing is journaled here until it has`;
      expect(await spoolStatusOf(b, STATUS)).toMatchObject({
        writable: false,
        error: `SPOOL_OF_ANOTHER_DATABASE: the spool may belong to another database: ${reason}`,
        databaseCheck: 'PENDING',
        databaseCheckReason: reason,
      });
      // Logged with the first answer BUFFERED, on a pipe the answers can overtake: waited for.
      await b.waitForOutput(`Not journaling into the spool at ${spoolDir}`);
      expect(occurrences(b.output(), `Not journaling into the spool at ${spoolDir}`)).toBe(1);
      expect((await readJournal(spoolDir)).segments).toEqual([]);

      await holder.release();
      await eventually(async () => {
        expect((await readTranscript(b, SESSION)).contents).toEqual(buffered);
      }, 15_000);
      expect(await spoolStatusOf(b, STATUS)).toMatchObject({ databaseCheck: 'REFUSED' });
      expect((await readTranscript(a, SESSION)).contents).toEqual(['a-stored']);
    },
  );
});
