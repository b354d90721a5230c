import { truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { databaseKinds } from './support/databases.js';
import { appendMessage, eventually, faultSuite } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// Reads while the database is down after a normal start: each read that needs the database
// answers DATABASE_UNAVAILABLE (retry later), never INTERNAL_SERVER_ERROR, and within its
// bound; what memory holds (pendingStatus) still answers. The outages are real: the server
// reaches PostgreSQL only through a TCP proxy that cut() makes drop and refuse connections,
// and a SQLite file is cut short under the open database (another process's write lock would
// not do: reads go on beside it in WAL mode).
const TEST_TIMEOUT_MS = 60_000;
const CAP = 2;
const RESOLVE_TIMEOUT_MS = 2000;
const SESSION = 'read-outage';

const READS: Record<string, string> = {
  metadata: `query($id: ID!) { session(id: $id) { id title messageCount } }`,
  transcript: `query($id: ID!) { session(id: $id) { messages(first: 10) { totalCount edges { node { content status } } } } }`,
  newest: `query($id: ID!) { session(id: $id) { messages(last: 2) { totalCount edges { node { content } } } } }`,
  sessions: `{ sessions(first: 5) { totalCount edges { node { id } } } }`,
};

const FORGED = Buffer.from('scribe:v1:not-an-order-key').toString('base64url');
const pageOf = (args: string) =>
  `query($id: ID!) { session(id: $id) { id messages(${args}) { totalCount edges { node { content } } } } }`;

// Input that can never work: refused for itself, database or not (so never "retry later").
const BAD_READS: Record<string, { query: string; variables?: Record<string, unknown> }> = {
  negativeFirst: { query: pageOf('first: -1') },
  zeroFirst: { query: pageOf('first: 0') },
  firstAndLast: { query: pageOf('first: 2, last: 2') },
  garbageAfter: { query: pageOf('first: 3, after: "!!!notacursor"') },
  forgedAfter: { query: pageOf(`first: 3, after: "${FORGED}"`) },
  forgedBefore: { query: pageOf(`last: 3, before: "${FORGED}"`) },
  fromVariable: {
    query: `query($id: ID!, $first: Int) { session(id: $id) { messages(first: $first) { totalCount } } }`,
    variables: { first: -1 },
  },
  sessionsGarbageAfter: { query: `{ sessions(first: 3, after: "zzz") { totalCount } }` },
  sessionsZeroFirst: { query: `{ sessions(first: 0) { totalCount } }` },
  sessionsEmptyTitle: { query: `{ sessions(filter: { titleContains: "" }) { totalCount } }` },
  inFragment: {
    query: `query($id: ID!) { session(id: $id) { ...page } } fragment page on Session { messages(last: 0) { totalCount } }`,
  },
};

/** Each bad read's error codes and messages, which must not depend on the database. */
async function badReadAnswers(target: ServerProcess) {
  const answers: Record<string, unknown> = {};
  for (const [name, { query, variables }] of Object.entries(BAD_READS)) {
    const answer = await target.gql(query, { id: SESSION, ...variables });
    const errors = (answer.errors ?? []) as {
      message: string;
      extensions?: Record<string, unknown>;
    }[];
    answers[name] = {
      status: answer.status,
      errors: errors.map((e) => ({ code: e.extensions?.code, message: e.message })),
    };
  }
  return answers;
}

const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

const { cleanups, faultTest, dataDirectory, server } = faultSuite(TEST_TIMEOUT_MS, {
  ADMIN_TOKEN: 't',
});

async function expectUnavailable(target: ServerProcess, name: string, query: string) {
  const started = Date.now();
  const answer = await target.gql(query, { id: SESSION });
  const errors = (answer.errors ?? []) as {
    message: string;
    extensions?: Record<string, unknown>;
  }[];
  expect({ name, status: answer.status, codes: errors.map((e) => e.extensions?.code) }).toEqual({
    name,
    status: 200,
    codes: ['DATABASE_UNAVAILABLE'],
  });
  for (const error of errors) {
    expect(error.message).toMatch(/^The database cannot be read now; .* Retry the read later\.$/);
    expect(error.extensions?.stacktrace).toBeUndefined();
  }
  // Bounded: the gate's wait, or the driver's connect and query timeouts, not a hang.
  expect(Date.now() - started).toBeLessThan(RESOLVE_TIMEOUT_MS + 6000);
}

describeOnPostgres('reads during a PostgreSQL outage after a normal start', () => {
  faultTest(
    'session, its messages both ways (cached or not), and the sessions list answer DATABASE_UNAVAILABLE; bad paging input still BAD_USER_INPUT; pendingStatus still answers; all read again once it is back',
    async () => {
      const { proxy, url } = await proxiedPostgresSchema(cleanups);
      const target = await server({
        DATA_DIR: await dataDirectory(),
        DATABASE_URL: url,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
        SESSION_RESOLVE_TIMEOUT_MS: String(RESOLVE_TIMEOUT_MS),
      });
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      // Loaded once, so the session cache holds it: a cached copy is revalidated too.
      const warm = await target.gql(READS.transcript, { id: SESSION });
      expect(warm.data.session.messages.totalCount).toBe(1);
      const refusedUp = await badReadAnswers(target);
      for (const answer of Object.values(refusedUp)) {
        expect(answer).toEqual({
          status: 200,
          errors: [{ code: 'BAD_USER_INPUT', message: expect.any(String) }],
        });
      }

      proxy.cut();
      for (const [name, query] of Object.entries(READS)) {
        await expectUnavailable(target, name, query);
      }
      // The same bad input, the same answer: its own fault, not the database's.
      expect(await badReadAnswers(target)).toEqual(refusedUp);
      // Past the cap, some accepted messages are in the journal only: that page's read too.
      for (let index = 0; index <= CAP; index += 1) {
        expect((await appendMessage(target, SESSION, `queued-${index}`)).status).toBe('QUEUED');
      }
      for (const name of ['transcript', 'newest']) {
        await expectUnavailable(target, name, READS[name]);
      }
      const pending = await target.gql(
        '{ pendingStatus { totalPending databaseWritable } }',
        {},
        { authorization: 'Bearer t' },
      );
      expect(pending.errors).toBeUndefined();
      expect(pending.data.pendingStatus.databaseWritable).toBe(false);
      expect(target.output()).not.toMatch(/Unhandled error at/);

      proxy.restore();
      await eventually(async () => {
        const read = await target.gql(READS.transcript, { id: SESSION });
        expect(read.errors).toBeUndefined();
        expect(read.data.session.messages.totalCount).toBe(CAP + 2);
      }, 15_000);
      const listed = await target.gql(READS.sessions);
      expect(listed.data.sessions.totalCount).toBe(1);
    },
  );
});

describe('reads of a SQLite file cut short under the running server', () => {
  faultTest(
    'session, its messages and the sessions list answer DATABASE_UNAVAILABLE; pendingStatus still answers',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({
        DATA_DIR: dataDir,
        SESSION_CACHE_SIZE: '0',
        SESSION_RESOLVE_TIMEOUT_MS: String(RESOLVE_TIMEOUT_MS),
      });
      // More than the page cache holds of the file at once, so that reads go to the disk.
      for (let index = 0; index < 50; index += 1) {
        const session = index === 0 ? SESSION : `other-${index}`;
        expect((await appendMessage(target, session, 'x'.repeat(3000))).status).toBe('PERSISTED');
      }

      for (const suffix of ['', '-wal']) await truncate(join(dataDir, `scribe.sqlite${suffix}`), 0);
      for (const [name, query] of Object.entries(READS)) {
        await expectUnavailable(target, name, query);
      }
      const pending = await target.gql(
        '{ pendingStatus { totalPending } }',
        {},
        { authorization: 'Bearer t' },
      );
      expect(pending.errors).toBeUndefined();
      expect(target.output()).not.toMatch(/Unhandled error at/);
    },
  );
});
