import { type Client } from 'graphql-ws';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import { Cleanups, appendMessage } from './support/fault-helpers.js';
import { errorCodes, eventually, liveClient, subscribe } from './support/live-client.js';
import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';

// Three real server processes share one PostgreSQL schema: what one instance commits reaches the
// subscribers of another only through LISTEN/NOTIFY (postgres-commit-feed.ts), so only
// PostgreSQL can run this suite. databaseKinds() says once, on stderr, why it is left out.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { id content } }
}`;
const EVENTS = `subscription($s: ID!, $after: String) {
  messageEvents(sessionId: $s, after: $after) { kind cursor node { id content revision } }
}`;
const EDIT = `mutation($input: EditMessageInput!) { editMessage(input: $input) { revision } }`;
const UPDATED = `subscription($id: ID!) { sessionUpdated(id: $id) { id title revision } }`;
const LAST_CURSOR = `query($id: ID!) {
  session(id: $id) { messages(last: 1) { edges { cursor } } }
}`;
const TRANSCRIPT = `query($id: ID!) {
  session(id: $id) { messages(first: 1000) { edges { cursor node { id content } } } }
}`;
const RECENT = `query($id: ID!) {
  session(id: $id) { revision messageCount messages(last: 50) { edges { node { id } } } }
}`;
const UPDATE = `mutation($input: UpdateSessionInput!) {
  updateSession(input: $input) { id title revision }
}`;

interface Edge {
  cursor: string;
  node: { id: string; content: string };
}
interface MessageEvent {
  kind: string;
  cursor: string;
  node: { id: string; content: string; revision: number };
}
interface SessionEvent {
  id: string;
  title: string | null;
  revision: number;
}
interface Instance {
  name: 'a' | 'b' | 'c';
  server: ServerProcess;
}

/** The contents of `events` that `name` appended, in the order they arrived. */
const contentsOf = (events: Edge[], name: string) =>
  events.map((edge) => edge.node.content).filter((content) => content.startsWith(`${name}-`));
const sequence = (name: string, count: number, from = 0) =>
  Array.from({ length: count }, (_, index) => `${name}-${from + index}`);
// Session ids of the suite's own: nothing another test of it appended can be mistaken for them.
const uniqueSession = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

describeOnPostgres('live updates across three instances sharing PostgreSQL', () => {
  const cleanups = new Cleanups();
  const clients: Client[] = [];
  let instances: Instance[];
  let a: ServerProcess;
  let b: ServerProcess;
  let c: ServerProcess;
  let directUrl: string;
  // Names instance A's connections, so that the test can find A's LISTEN connection alone.
  const applicationName = `scribe-live-${randomBytes(4).toString('hex')}-a`;

  beforeAll(async () => {
    const schema = await createPostgresSchema();
    cleanups.add(schema.drop);
    directUrl = schema.url;
    const urlOfA = new URL(schema.url);
    urlOfA.searchParams.set('application_name', applicationName);
    const start = async (name: Instance['name'], databaseUrl: string): Promise<Instance> => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      const server = await startServer({
        DATA_DIR: dataDir.path,
        DATABASE_URL: databaseUrl,
        DB_RETRY_INTERVAL_MS: '100',
        NODE_ENV: 'production',
      });
      cleanups.add(() => server.stop('SIGKILL'));
      cleanups.showOnFailure(`instance ${name}`, () => server.output());
      return { name, server };
    };
    instances = await Promise.all([
      start('a', urlOfA.toString()),
      start('b', schema.url),
      start('c', schema.url),
    ]);
    [a, b, c] = instances.map((instance) => instance.server);
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => Promise.resolve(client.dispose())));
  });

  afterAll(() => cleanups.run());

  /** A graphql-ws client of `server`, disposed after the test. */
  function connect(server: ServerProcess): Client {
    const client = liveClient(`${server.url.replace(/^http/, 'ws')}/graphql`);
    clients.push(client);
    return client;
  }

  async function lastCursor(server: ServerProcess, sessionId: string): Promise<string> {
    const read = await server.gql(LAST_CURSOR, { id: sessionId });
    expect(read.errors).toBeUndefined();
    return read.data.session.messages.edges[0].cursor as string;
  }

  async function transcript(server: ServerProcess, sessionId: string): Promise<Edge[]> {
    const read = await server.gql(TRANSCRIPT, { id: sessionId });
    expect(read.errors).toBeUndefined();
    return read.data.session.messages.edges as Edge[];
  }

  /** Appends `contents` one after the other; each must be answered PERSISTED. */
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

  async function updateTitle(
    server: ServerProcess,
    id: string,
    title: string,
  ): Promise<SessionEvent> {
    const answer = await server.gql(UPDATE, { input: { id, title } });
    expect(answer.errors).toBeUndefined();
    return answer.data.updateSession as SessionEvent;
  }

  const liveTest = (name: string, body: () => Promise<void>) =>
    it(name, () => cleanups.guard(body));

  liveTest(
    'a subscriber that drops while A, B and C append, and resumes on B from its last live cursor, misses nothing and gets nothing twice',
    async () => {
      const APPENDS = 60;
      const session = uniqueSession('resume');
      await appendMessage(a, session, 'seed');
      const seedCursor = await lastCursor(a, session);
      const appended: string[][] = [[], [], []];
      const appending = Promise.all(
        instances.map(async ({ name, server }, index) => {
          for (const content of sequence(name, APPENDS)) {
            appended[index].push(...(await appendAll(server, session, [content])));
          }
        }),
      );
      const firstClient = connect(a);
      const first = subscribe<Edge>(
        firstClient,
        LIVE,
        { s: session, after: seedCursor },
        'messageAppended',
      );
      await first.received(40);
      first.stop();
      await firstClient.dispose();
      const heard = first.events.slice();
      // Resumed on another instance, from the last live event's cursor (its commit number).
      const resumed = subscribe<Edge>(
        connect(b),
        LIVE,
        { s: session, after: heard.at(-1)?.cursor },
        'messageAppended',
      );
      await appending;
      const total = 3 * APPENDS;
      const rest = await resumed.received(total - heard.length);
      const ids = [...heard, ...rest].map((edge) => edge.node.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(ids)).toEqual(new Set(appended.flat()));
      for (const [index, { name }] of instances.entries()) {
        expect(contentsOf([...heard, ...rest], name)).toEqual(sequence(name, APPENDS));
        expect(appended[index]).toHaveLength(APPENDS);
      }
    },
  );

  liveTest(
    'a subscriber on A gets every message appended through A, B and C exactly once, each appender in its order',
    async () => {
      const APPENDS = 100;
      const session = uniqueSession('fan-in');
      await appendMessage(a, session, 'seed');
      // Replay-then-live from the seed's cursor: whenever the subscription starts to listen,
      // nothing committed after the seed is missed, so no wait is needed before appending.
      const live = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: await lastCursor(a, session) },
        'messageAppended',
      );
      const acknowledged = await Promise.all(
        instances.map(({ name, server }) => appendAll(server, session, sequence(name, APPENDS))),
      );
      // Appended once every other append was answered, so committed after all of them: live
      // delivery is in commit order, so once it arrives everything owed has arrived before it.
      const [closing] = await appendAll(b, session, ['closing']);
      const events = await live.received(3 * APPENDS + 1);

      expect(events).toHaveLength(3 * APPENDS + 1);
      expect(events[3 * APPENDS].node.id).toBe(closing);
      const received = events.slice(0, -1).map((edge) => edge.node.id);
      expect(new Set(received).size).toBe(received.length);
      expect([...received].sort()).toEqual(acknowledged.flat().sort());
      for (const { name } of instances) {
        expect(contentsOf(events, name)).toEqual(sequence(name, APPENDS));
      }

      const stored = await transcript(c, session);
      expect(stored.map((edge) => edge.node.content)[0]).toBe('seed');
      expect(stored.at(-1)?.node.id).toBe(closing);
      // A live cursor names the message's place as a page's does, and its commit number too.
      const places = new Map(stored.map((edge) => [edge.node.id, placeOf(edge.cursor)]));
      for (const edge of events) {
        expect(placeOf(edge.cursor)).toBe(places.get(edge.node.id));
        expect(Buffer.from(edge.cursor, 'base64url').toString()).toMatch(/#\d+$/);
      }
      for (const { name } of instances) {
        expect(contentsOf(stored, name)).toEqual(sequence(name, APPENDS));
      }
      // The transcript holds what arrived, but not in the order it arrived, and cannot across
      // instances: an order key is issued from the accepting instance's clock when it accepts a
      // message, while one session's writes commit in the order their transactions reach the
      // session's row, and live delivery follows the commits. Concurrent appenders on several
      // instances commit out of key order (runs of this test swap 40 to 80 of the 45,000
      // pairs, keys up to 35 ms apart). Each appender waits for an answer before its next
      // append, so its own order holds in both, as checked above.
      expect(
        stored
          .slice(1)
          .map((edge) => edge.node.id)
          .sort(),
      ).toEqual(events.map((edge) => edge.node.id).sort());
    },
  );

  liveTest(
    'clients rotating over the instances read every acknowledged append back through any instance',
    async () => {
      const CLIENTS = 6;
      const ROUNDS = 24;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, client) => {
          const session = uniqueSession(`rotating-${client}`);
          const acknowledged: string[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            const writer = instances[(client + round) % 3].server;
            const reader = instances[(client + round + 1) % 3].server;
            acknowledged.push(...(await appendAll(writer, session, [`${client}-${round}`])));
            const read = await reader.gql(RECENT, { id: session });
            expect(read.errors).toBeUndefined();
            const { revision, messageCount, messages } = read.data.session;
            expect(messageCount).toBe(acknowledged.length);
            expect(revision).toBe(acknowledged.length);
            const ids = messages.edges.map((edge: { node: { id: string } }) => edge.node.id);
            // Each append was answered before the next was sent, so it was accepted later.
            expect(ids).toEqual(acknowledged.slice(-50));
          }
        }),
      );
    },
  );

  liveTest(
    'a subscriber on A hears each title change made through any instance, once and in order',
    async () => {
      const session = uniqueSession('titled');
      const fences = uniqueSession('fences');
      await appendMessage(a, session, 'created');
      const client = connect(a);
      const updates = subscribe<SessionEvent>(client, UPDATED, { id: session }, 'sessionUpdated');
      // Without `after`, everything the fence subscription receives was heard live. A's feed
      // hands notices on one at a time, in commit order: once a fence appended after a change
      // arrives, A has told its subscribers of that change.
      const fenced = subscribe<Edge>(client, LIVE, { s: fences }, 'messageAppended');
      const fence = async (label: string) => {
        await appendMessage(b, fences, label);
        await eventually(() => fenced.events.some((edge) => edge.node.content === label));
      };
      // Neither subscription says when it listens: change the title until both have heard.
      let probes = 0;
      for (; updates.events.length === 0 || fenced.events.length === 0; probes++) {
        if (probes === 50) throw new Error('the subscriptions heard nothing of 50 changes');
        await updateTitle(c, session, `probe-${probes}`);
        await appendMessage(b, fences, `probe-${probes}`);
        await eventually(() => updates.events.length > 0 && fenced.events.length > 0, 100).catch(
          () => undefined,
        );
      }
      await fence('settled');
      const heard = updates.events.length;

      // One change per fence. (Today A reads the session when it handles the notice, not as the
      // change left it: two changes made before A handled the first would both be told with
      // the second's state.)
      const changes: SessionEvent[] = [];
      for (const [server, title] of [
        [c, 'first'],
        [b, 'second'],
        [a, 'third'],
      ] as const) {
        changes.push(await updateTitle(server, session, title));
        await fence(`after-${title}`);
        // The two subscriptions' frames may cross on the socket; nothing more comes after.
        await eventually(() => updates.events.length >= heard + changes.length);
        expect(updates.events.slice(heard)).toEqual(changes);
      }
      expect(changes.map((change) => change.revision)).toEqual(
        [0, 1, 2].map((step) => changes[0].revision + step),
      );
    },
  );

  liveTest(
    'a subscriber on A whose LISTEN connection is lost is told, and resumes from its last cursor',
    async () => {
      const session = uniqueSession('interrupted');
      await appendMessage(a, session, 'seed');
      const before = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: await lastCursor(a, session) },
        'messageAppended',
      );
      await appendAll(b, session, sequence('b', 5));
      await appendAll(c, session, sequence('c', 5));
      const heard = await before.received(10);
      expect(heard.map((edge) => edge.node.content)).toEqual([
        ...sequence('b', 5),
        ...sequence('c', 5),
      ]);

      const admin = new pg.Client({ connectionString: directUrl });
      await admin.connect();
      try {
        const killed = await admin.query<{ pid: number }>(
          `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = $1 AND query LIKE 'LISTEN%'`,
          [applicationName],
        );
        expect(killed.rows).toHaveLength(1);
      } finally {
        await admin.end();
      }
      await before.ended;
      expect(errorCodes(before.error)).toEqual(['SUBSCRIPTION_INTERRUPTED']);
      expect(before.events).toHaveLength(10);
      // Logged as the subscriber is told, on a pipe its end can overtake: waited for.
      await a.waitForOutput(/Stopped hearing commits/);

      // Committed after the subscriber was told, whether A listens again by then or not. Each
      // append waits for the one before, so the keys follow the commits: the last cursor
      // received is a place in the transcript that nothing committed later can precede.
      const meanwhile = [
        ...(await appendAll(b, session, sequence('b', 5, 5))),
        ...(await appendAll(c, session, sequence('c', 5, 5))),
      ];
      await a.waitForOutput(/(Listening for commits of every instance[\s\S]*){2}/);
      const resumed = subscribe<Edge>(
        connect(a),
        LIVE,
        { s: session, after: heard.at(-1)?.cursor },
        'messageAppended',
      );
      const later = [
        ...(await appendAll(c, session, sequence('c', 5, 10))),
        ...(await appendAll(a, session, sequence('a', 5))),
      ];
      const [closing] = await appendAll(b, session, ['closing']);
      const events = await resumed.received(meanwhile.length + later.length + 1);

      expect(events.map((edge) => edge.node.id)).toEqual([...meanwhile, ...later, closing]);
    },
  );

  liveTest(
    'edits on B racing appends on C reach a messageEvents subscriber on A in commit order, and a resume on C misses none',
    async () => {
      const EDITS = 30;
      const session = uniqueSession('edits');
      const [target] = await appendAll(a, session, ['v0']);
      const seed = await lastCursor(a, session);
      const live = subscribe<MessageEvent>(
        connect(a),
        EVENTS,
        { s: session, after: seed },
        'messageEvents',
      );
      const editing = (async () => {
        for (let revision = 1; revision <= EDITS; revision++) {
          const answer = await b.gql(EDIT, {
            input: {
              sessionId: session,
              id: target,
              content: `v${revision}`,
              expectedRevision: revision,
            },
          });
          expect(answer.errors).toBeUndefined();
        }
      })();
      const appended = appendAll(c, session, sequence('c', EDITS));
      await Promise.all([editing, appended]);
      await eventually(
        () =>
          live.events.some((event) => event.kind === 'EDITED' && event.node.revision === EDITS + 1),
        20_000,
      );
      await eventually(() => contentsOf(live.events, 'c').length === EDITS);

      // One order: commit numbers rise, no event twice, and each message's states only move on.
      const numbers = live.events.map((event) => commitNumberOf(event.cursor));
      expect(numbers).toEqual([...numbers].sort((x, y) => x - y));
      expect(new Set(numbers).size).toBe(numbers.length);
      const revisions = live.events
        .filter((event) => event.node.id === target)
        .map((event) => event.node.revision);
      expect(revisions).toEqual([...revisions].sort((x, y) => x - y));
      expect(revisions.at(-1)).toBe(EDITS + 1);
      expect(contentsOf(live.events as unknown as Edge[], 'c')).toEqual(sequence('c', EDITS));

      // Resumed on C from the tenth event: every append after it, and the edit's last state.
      const from = live.events[9];
      const resumed = subscribe<MessageEvent>(
        connect(c),
        EVENTS,
        { s: session, after: from.cursor },
        'messageEvents',
      );
      const later = live.events.slice(10);
      const appendsLater = later.filter((event) => event.kind === 'APPENDED');
      await eventually(
        () =>
          resumed.events.filter((event) => event.kind === 'APPENDED').length ===
            appendsLater.length &&
          resumed.events.some((event) => event.node.revision === EDITS + 1),
        20_000,
      );
      expect(
        resumed.events.filter((event) => event.kind === 'APPENDED').map((e) => e.node.id),
      ).toEqual(appendsLater.map((event) => event.node.id));
      const resumedNumbers = resumed.events.map((event) => commitNumberOf(event.cursor));
      expect(resumedNumbers.every((number) => number > commitNumberOf(from.cursor))).toBe(true);
      expect(new Set(resumedNumbers).size).toBe(resumedNumbers.length);
    },
  );
});

/** The order key a cursor names (a live one adds `#<commit number>`). */
function placeOf(cursor: string): string {
  return Buffer.from(cursor, 'base64url').toString().replace(/#\d+$/, '');
}

/** The commit number a live cursor carries (`<key>#<number>`). */
function commitNumberOf(cursor: string): number {
  return Number(/#(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString())?.[1] ?? NaN);
}
