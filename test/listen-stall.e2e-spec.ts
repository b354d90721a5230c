import { type Client } from 'graphql-ws';
import { randomBytes } from 'node:crypto';
import { databaseKinds } from './support/databases.js';
import { Cleanups, appendMessage } from './support/fault-helpers.js';
import { errorCodes, liveClient, subscribe, type Subscribed } from './support/live-client.js';
import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';
import { type TcpProxy } from '../src/kit/tcp-proxy.js';

// Two real server processes share one PostgreSQL schema; A reaches it through a TCP proxy that
// can blackhole the path: drop every byte and keep the sockets open, so that A's LISTEN
// connection neither errors nor ends. Only PostgreSQL has a LISTEN to stall.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { id content } }
}`;
const LAST_CURSOR = `query($id: ID!) {
  session(id: $id) { messages(last: 1) { edges { cursor } } }
}`;

const HEARTBEAT_MS = 200;
const DEADLINE_MS = 1500;
// How late past the deadline the interruption may arrive on a busy machine: the timer's own
// lateness, and the frame's way to the client. Far below what the old code takes (forever).
const SLACK_MS = 2000;

interface Edge {
  cursor: string;
  node: { id: string; content: string };
}

const sequence = (name: string, count: number, from = 0) =>
  Array.from({ length: count }, (_, index) => `${name}-${from + index}`);

/** Resolves once `subscription` ended; rejects if it has not within `ms`. */
async function endedWithin(subscription: Subscribed, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    subscription.ended,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

describeOnPostgres('a LISTEN connection that stops hearing, its socket still open', () => {
  const cleanups = new Cleanups();
  const clients: Client[] = [];
  let proxy: TcpProxy;
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    const schema = await proxiedPostgresSchema(cleanups);
    proxy = schema.proxy;
    const start = async (name: string, databaseUrl: string): Promise<ServerProcess> => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      const server = await startServer({
        DATA_DIR: dataDir.path,
        DATABASE_URL: databaseUrl,
        DB_RETRY_INTERVAL_MS: '100',
        LISTEN_HEARTBEAT_MS: String(HEARTBEAT_MS),
        LISTEN_HEARTBEAT_DEADLINE_MS: String(DEADLINE_MS),
        NODE_ENV: 'production',
      });
      cleanups.add(() => server.stop('SIGKILL'));
      cleanups.showOnFailure(`instance ${name}`, () => server.output());
      return server;
    };
    // One after the other: two first starts on a fresh schema would race at its migrations.
    a = await start('a', schema.url);
    b = await start('b', schema.directUrl);
  });

  afterEach(async () => {
    proxy.restore();
    await Promise.all(clients.splice(0).map((client) => Promise.resolve(client.dispose())));
  });

  afterAll(() => cleanups.run());

  function connect(server: ServerProcess): Client {
    const client = liveClient(`${server.url.replace(/^http/, 'ws')}/graphql`);
    clients.push(client);
    return client;
  }

  async function appendAll(
    server: ServerProcess,
    sessionId: string,
    contents: string[],
  ): Promise<string[]> {
    const ids: string[] = [];
    for (const content of contents) {
      const answer = await appendMessage(server, sessionId, content);
      expect(answer.status).toBe('PERSISTED');
      ids.push(answer.id);
    }
    return ids;
  }

  it('interrupts A’s subscriber within the deadline, refuses new ones while deaf, and a resumed one misses nothing', () =>
    cleanups.guard(async () => {
      const session = `stall-${randomBytes(4).toString('hex')}`;
      await appendAll(b, session, ['seed']);
      const seed = await b.gql(LAST_CURSOR, { id: session });
      expect(seed.errors).toBeUndefined();
      const before = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: seed.data.session.messages.edges[0].cursor },
        'messageAppended',
      );
      await appendAll(b, session, sequence('b', 3));
      const heard = await before.received(3);
      expect(heard.map((edge) => edge.node.content)).toEqual(sequence('b', 3));

      proxy.blackhole();
      const stalledAt = Date.now();
      const missed = await appendAll(b, session, sequence('b', 5, 3));

      await endedWithin(before, DEADLINE_MS + SLACK_MS, 'the subscription on A');
      const elapsed = Date.now() - stalledAt;
      expect(errorCodes(before.error)).toEqual(['SUBSCRIPTION_INTERRUPTED']);
      expect(elapsed).toBeLessThanOrEqual(DEADLINE_MS + SLACK_MS);
      expect(before.events).toHaveLength(3);
      // Logged as the subscriber is told, on a pipe its end can overtake: waited for.
      await a.waitForOutput(
        new RegExp(`Stopped hearing commits \\(no heartbeat heard within ${DEADLINE_MS} ms`),
      );

      // Deaf, A takes no new subscriber: it would miss what is committed meanwhile.
      const whileDeaf = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: heard.at(-1)?.cursor },
        'messageAppended',
      );
      await endedWithin(whileDeaf, 5000, 'a subscription begun on deaf A');
      expect(errorCodes(whileDeaf.error)).toEqual(['SUBSCRIPTION_INTERRUPTED']);
      expect(whileDeaf.events).toEqual([]);
      missed.push(...(await appendAll(b, session, sequence('b', 2, 8))));

      proxy.restore();
      await a.waitForOutput(/(Listening for commits of every instance[\s\S]*){2}/, 20_000);
      const resumed = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: heard.at(-1)?.cursor },
        'messageAppended',
      );
      const [closing] = await appendAll(b, session, ['closing']);
      const events = await resumed.received(missed.length + 1);

      expect(events.map((edge) => edge.node.id)).toEqual([...missed, closing]);
      expect(events.map((edge) => edge.node.content)).toEqual([...sequence('b', 7, 3), 'closing']);
    }));
});
