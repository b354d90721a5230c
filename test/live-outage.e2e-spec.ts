import { databaseKinds } from './support/databases.js';
import { appendMessage, faultSuite } from './support/fault-helpers.js';
import { errorCodes, liveClient, subscribe } from './support/live-client.js';
import { type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// Subscriptions started during a PostgreSQL outage after a normal start, with and without a
// resume cursor. The server reaches PostgreSQL only through a TCP proxy: cut() drops every
// connection (the LISTEN connection too, so the instance knows at once it is deaf), blackhole()
// keeps them open and answers nothing (the LISTEN connection looks alive until its heartbeat
// deadline, set long here, so a resumed subscription is admitted and its replay's reads time
// out). Either way the client hears SUBSCRIPTION_INTERRUPTED, what a subscription that may
// miss commits promises, told as an outage, never INTERNAL_SERVER_ERROR nor the driver's words.
const TEST_TIMEOUT_MS = 60_000;
const SESSION = 'live-outage';
const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { content } }
}`;
const PAGE = `query($id: ID!) { session(id: $id) { messages(first: 1) { edges { cursor } } } }`;

const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;
const { cleanups, faultTest, dataDirectory, server } = faultSuite(TEST_TIMEOUT_MS);

async function refusal(target: ServerProcess, after: string | undefined) {
  const client = liveClient(`${target.url.replace(/^http/, 'ws')}/graphql`);
  cleanups.add(() => Promise.resolve(client.dispose()));
  const subscribed = subscribe(client, LIVE, { s: SESSION, after }, 'messageAppended');
  await subscribed.ended;
  expect(subscribed.events).toEqual([]);
  return subscribed.error as { message: string; extensions?: Record<string, unknown> }[];
}

async function endedWith(target: ServerProcess, after: string | undefined) {
  const errors = await refusal(target, after);
  expect(errorCodes(errors)).toEqual(['SUBSCRIPTION_INTERRUPTED']);
  return errors[0];
}

// Resume cursors that can never work: refused for themselves, database or not.
const BAD_CURSORS = ['!!!notacursor', Buffer.from('scribe:v1:nope').toString('base64url')];
const badCursorAnswers = (target: ServerProcess) =>
  Promise.all(
    BAD_CURSORS.map(async (after) =>
      (await refusal(target, after)).map((e) => ({ code: e.extensions?.code, message: e.message })),
    ),
  );

describeOnPostgres('subscriptions during a PostgreSQL outage after a normal start', () => {
  async function started() {
    const { proxy, url } = await proxiedPostgresSchema(cleanups);
    const target = await server({
      DATA_DIR: await dataDirectory(),
      DATABASE_URL: url,
      DB_RETRY_INTERVAL_MS: '200',
      LISTEN_HEARTBEAT_DEADLINE_MS: '60000',
      NODE_ENV: 'production',
    });
    expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
    const page = await target.gql(PAGE, { id: SESSION });
    return { proxy, target, cursor: page.data.session.messages.edges[0].cursor as string };
  }

  faultTest(
    'cut: new subscriptions, resumed or not, are refused as interrupted; bad cursors as bad input',
    async () => {
      const { proxy, target, cursor } = await started();
      const badUp = await badCursorAnswers(target);
      expect(badUp.flat().map((error) => error.code)).toEqual(['BAD_USER_INPUT', 'BAD_USER_INPUT']);

      proxy.cut();
      for (const after of [undefined, cursor]) {
        const error = await endedWith(target, after);
        expect(error.message).toBe(
          'Live updates are unavailable while the database cannot be reached; try again shortly',
        );
      }
      // Deaf now, and still the input's own fault first: never "try again" for these.
      expect(await badCursorAnswers(target)).toEqual(badUp);
      expect(target.output()).not.toMatch(/Subscription failed/);
    },
  );

  faultTest(
    'blackholed: a resumed subscription whose replay cannot read ends interrupted, as an outage, naming no host',
    async () => {
      const { proxy, target, cursor } = await started();

      proxy.blackhole();
      const error = await endedWith(target, cursor);
      expect(error.message).toBe(
        'The stored messages could not be read (the database cannot be read now): subscribe again shortly, with the same `after`',
      );
      expect(error.extensions?.stacktrace).toBeUndefined();
      expect(target.output()).not.toMatch(/Subscription failed/);
    },
  );
});
