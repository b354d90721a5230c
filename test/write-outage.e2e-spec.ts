import { databaseKinds } from './support/databases.js';
import { appendMessage, eventually, faultSuite } from './support/fault-helpers.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// The mutations that change the database directly, not through the journal (updateSession,
// deleteSession), while PostgreSQL is down after a normal start: DATABASE_UNAVAILABLE with a
// message saying what was not done, no stack and no driver words for updateSession, and
// nothing changed once the database is back. The outage is real: the server reaches
// PostgreSQL only through a TCP proxy that cut() makes drop and refuse connections.
const TEST_TIMEOUT_MS = 60_000;
const SESSION = 'write-outage';
const UPDATE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { revision } }`;
const DELETE = `mutation($id: ID!) { deleteSession(id: $id) { deleted } }`;
const READ = `query($id: ID!) { session(id: $id) { title revision messageCount } }`;

type WireError = { message: string; extensions?: Record<string, unknown> };

const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;
const { cleanups, faultTest, dataDirectory, server } = faultSuite(TEST_TIMEOUT_MS, {
  ADMIN_TOKEN: 't',
});

describeOnPostgres('mutations outside the journal during a PostgreSQL outage', () => {
  faultTest(
    'updateSession and deleteSession answer DATABASE_UNAVAILABLE and change nothing',
    async () => {
      const { proxy, url } = await proxiedPostgresSchema(cleanups);
      const target = await server({
        DATA_DIR: await dataDirectory(),
        DATABASE_URL: url,
        DB_RETRY_INTERVAL_MS: '200',
        NODE_ENV: 'production',
      });
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      const before = await target.gql(READ, { id: SESSION });
      expect(before.data.session).toEqual({ title: null, revision: 1, messageCount: 1 });

      proxy.cut();
      for (const input of [
        { id: SESSION, title: 'changed' },
        { id: SESSION, title: 'changed', expectedRevision: 1 },
      ]) {
        const answer = await target.gql(UPDATE, { input });
        const errors = answer.errors as WireError[];
        expect(errors.map((error) => error.extensions?.code)).toEqual(['DATABASE_UNAVAILABLE']);
        expect(errors[0].message).toBe(
          `The database cannot be reached now, so session "${SESSION}" was not updated (unless the connection dropped as it committed: read its revision, or retry with expectedRevision)`,
        );
        expect(errors[0].extensions?.stacktrace).toBeUndefined();
      }
      const deleted = await target.gql(DELETE, { id: SESSION }, { authorization: 'Bearer t' });
      const deleteErrors = deleted.errors as WireError[];
      expect(deleteErrors.map((error) => error.extensions?.code)).toEqual(['DATABASE_UNAVAILABLE']);
      // The client is told what was not done, never the driver's words (a host and port here).
      expect(deleteErrors[0].message).toBe(
        `Session ${SESSION} was not deleted: the database could not delete it now; retry`,
      );
      // Logged as the refusal is answered, on a pipe the answer can overtake: waited for.
      await target.waitForOutput(`deleteSession ${SESSION} failed, nothing deleted`);
      expect(target.output()).not.toMatch(/Unhandled error at|ERROR \[/);

      proxy.restore();
      await eventually(async () => {
        const read = await target.gql(READ, { id: SESSION });
        expect(read.errors).toBeUndefined();
        expect(read.data.session).toEqual(before.data.session);
      }, 15_000);
      // The check above reads stderr unordered by its wait (an ERROR line could still be on its
      // way); an unhandled error of any of these requests is looked for once more, in all the
      // server printed, after it has stopped and its pipes have closed.
      await target.stop();
      expect(target.output()).not.toContain('Unhandled error at');
    },
  );
});
