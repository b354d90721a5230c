import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { parse, type GraphQLSchema } from 'graphql';
import { type Client } from 'graphql-ws';
import { LiveChannels } from '../src/live/live-channels.js';
import { SharedExecution } from '../src/live/shared-execution.js';
import { ServedSchema } from '../src/common/graphql/served-schema.js';
import { databaseKinds, type DatabaseKind } from './support/databases.js';
import {
  errorCodes,
  eventually,
  liveClient,
  rawSocket,
  refusedUpgrade,
  subscribe,
  type RawSocket,
} from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

const APPEND = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id } }
}`;
const PAGE = `query($id: ID!) {
  session(id: $id) { messages(first: 1000) { edges { cursor node { id content } } } }
}`;
const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { id content role } }
}`;
const UPDATED = `subscription($id: ID!) { sessionUpdated(id: $id) { id title metadata revision } }`;

const as = (token: string) => ({ authorization: `Bearer ${token}` });

/** The app listening on a port, and its graphql-ws URL. */
async function listening(
  database: DatabaseKind,
  variables: Record<string, string>,
): Promise<{ sut: TestApp; url: string; channels: LiveChannels }> {
  const sut = await createTestApp(database, variables);
  await sut.app.listen(0, '127.0.0.1');
  const url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
  return { sut, url, channels: sut.app.get(LiveChannels) };
}

describe.each(databaseKinds())('subscriptions on %s', (database) => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;
  const clients: Client[] = [];

  beforeAll(async () => {
    ({ sut, url, channels } = await listening(database, {
      API_TOKENS: 'rw=read+append,ro=read,ao=append',
      SUBSCRIPTION_BUFFER: '8',
      MAX_MESSAGE_BYTES: String(256 * 1024),
      MAX_BODY_BYTES: String(512 * 1024),
    }));
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    await eventually(() => channels.openCount === 0);
  });

  afterAll(() => sut.close());

  const client = (token = 'ro') => {
    const created = liveClient(url, { authorization: `Bearer ${token}` });
    clients.push(created);
    return created;
  };

  async function append(sessionId: string, content: string): Promise<string> {
    const answer = await sut.gql(APPEND, { input: { sessionId, role: 'USER', content } }, as('rw'));
    expect(answer.data?.appendMessage?.status).toBe('PERSISTED');
    return answer.data.appendMessage.message.id as string;
  }

  const stored = async (sessionId: string) =>
    (await sut.gql(PAGE, { id: sessionId }, as('ro'))).data.session.messages.edges as {
      cursor: string;
      node: { id: string; content: string };
    }[];

  it("streams each message committed from then on, in order, with a cursor that pages as a page's does", async () => {
    const live = subscribe(client(), LIVE, { s: 'live-1' }, 'messageAppended');
    await eventually(() => channels.openCount === 1);

    const ids = [];
    for (const content of ['one', 'two', 'three', 'four', 'five']) {
      ids.push(await append('live-1', content));
    }

    const events = await live.received(5);
    expect(events.map((event) => event.node.content)).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
    ]);
    const pages = await stored('live-1');
    expect(events.map((event) => event.node)).toEqual(
      pages.map((edge) => ({ ...edge.node, role: 'USER' })),
    );
    // A live cursor pages as a page's does: after the third, the fourth and fifth.
    const after = await sut.gql(
      `query($id: ID!, $after: String) { session(id: $id) { messages(first: 10, after: $after) { edges { cursor node { content } } } } }`,
      { id: 'live-1', after: events[2].cursor },
      as('ro'),
    );
    expect(after.data.session.messages.edges).toEqual(
      pages.slice(3).map((edge) => ({ cursor: edge.cursor, node: { content: edge.node.content } })),
    );
    // Other sessions' messages are not this subscriber's.
    await append('live-other', 'elsewhere');
    await append('live-1', 'six');
    expect((await live.received(6))[5].node.content).toBe('six');
    expect(live.events).toHaveLength(6);
  });

  it("shares an event's execution among subscribers of one document, whatever their token", async () => {
    // Sharing rests on the served schema: nothing under the event's type reads who asks.
    const sharing = sut.app.get(SharedExecution);
    const schema = sut.app.get(ServedSchema).schema as GraphQLSchema;
    const events = `subscription($s: ID!) { messageEvents(sessionId: $s) { kind message { id content revision } } }`;
    expect(sharing.keyOf({ schema, document: parse(LIVE) })).toBeDefined();
    expect(sharing.keyOf({ schema, document: parse(events) })).toBeDefined();
    expect(sharing.keyOf({ schema, document: parse(UPDATED) })).toBeUndefined();

    const subscribers = [client('ro'), client('rw'), client('ro')].map((each) =>
      subscribe(each, LIVE, { s: 'shared-1' }, 'messageAppended'),
    );
    await eventually(() => channels.openCount === 3);
    const id = await append('shared-1', 'once for all');
    for (const live of subscribers) {
      expect((await live.received(1))[0].node).toEqual({
        id,
        content: 'once for all',
        role: 'USER',
      });
    }
  });

  it('serves Apollo Client through its graphql-ws link', async () => {
    const apollo = new ApolloClient({
      link: new GraphQLWsLink(client()),
      cache: new InMemoryCache(),
    });
    const contents: string[] = [];
    const twoArrived = new Promise<void>((resolve, reject) => {
      const subscription = apollo
        .subscribe({ query: gql(LIVE), variables: { s: 'apollo' } })
        .subscribe({
          next: (result) => {
            contents.push((result.data as any)?.messageAppended.node.content);
            if (contents.length === 2) {
              subscription.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
    });
    await eventually(() => channels.openCount === 1);

    await append('apollo', 'hello');
    await append('apollo', 'world');

    await twoArrived;
    expect(contents).toEqual(['hello', 'world']);
    apollo.stop();
  });

  it('replays what is stored after `after`, then goes live: across a reconnect, while appends go on, nothing is missed or repeated', async () => {
    const seed = await append('resume', 'seed');
    const seedCursor = (await stored('resume')).find((edge) => edge.node.id === seed)!.cursor;
    const total = 150;
    const appended: string[] = [];
    let appending = true;
    const appender = (async () => {
      for (let index = 0; index < total; index++) {
        appended.push(await append('resume', `m${index}`));
      }
      appending = false;
    })();

    const first = client();
    const before = subscribe(first, LIVE, { s: 'resume', after: seedCursor }, 'messageAppended');
    await before.received(30);
    before.stop();
    await first.dispose();
    const seen = before.events.slice();
    expect(appending).toBe(true);

    const after = subscribe(
      client(),
      LIVE,
      { s: 'resume', after: seen[seen.length - 1].cursor },
      'messageAppended',
    );
    await appender;
    const rest = await after.received(total - seen.length);

    const ids = [...seen, ...rest].map((event) => event.node.id);
    expect(ids).toEqual(appended);
    expect(new Set(ids).size).toBe(total);
    expect(after.events).toHaveLength(total - seen.length);
  });

  it('ends a subscriber that stops reading with SLOW_CONSUMER, holding no more than its buffer', async () => {
    const raw = await authenticated(url, 'ro');
    raw.send({
      id: 'slow',
      type: 'subscribe',
      payload: { query: LIVE, variables: { s: 'slow' } },
    });
    await eventually(() => channels.openCount === 1);
    // The client stops reading its socket: the kernel's buffers fill, then the server's feed.
    (raw.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const big = 'x'.repeat(200 * 1024);
    let appended = 0;
    while (channels.openCount === 1 && appended < 400) {
      await append('slow', `${appended}:${big}`);
      appended += 1;
    }
    expect(channels.openCount).toBe(0);
    (raw.socket as unknown as { _socket: { resume(): void } })._socket.resume();

    const ended = await raw.next('error');
    expect(ended.id).toBe('slow');
    expect(errorCodes(ended.payload)).toEqual(['SLOW_CONSUMER']);
    expect(ended.payload[0].message).toMatch(/subscribe again with `after`/);
    const delivered = raw.messages.filter((message) => message.type === 'next');
    expect(delivered.length).toBeGreaterThan(0);
    expect(delivered.length).toBeLessThan(appended);
    // What it got is a prefix of the transcript, in order.
    expect(delivered.map((message) => message.payload.data.messageAppended.node.id)).toEqual(
      (await stored('slow')).slice(0, delivered.length).map((edge) => edge.node.id),
    );
    // The connection itself stays usable.
    raw.send({
      id: 'again',
      type: 'subscribe',
      payload: { query: LIVE, variables: { s: 'slow' } },
    });
    await eventually(() => channels.openCount === 1);
    raw.socket.close();
  });

  const updateTitle = async (id: string, title: string) => {
    const answer = await sut.gql(
      `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { revision } }`,
      { input: { id, title, metadata: { title } } },
      as('rw'),
    );
    expect(answer.errors).toBeUndefined();
  };

  it('tells sessionUpdated subscribers of each change of title and metadata', async () => {
    await append('titled', 'first');
    const updates = subscribe(client(), UPDATED, { id: 'titled' }, 'sessionUpdated');
    await eventually(() => channels.openCount === 1);

    // Each change is heard before the next is made: on PostgreSQL a notice is read when it is
    // handled, so two changes in quick succession may both read (and send) the later one.
    await updateTitle('titled', 'Draft');
    expect(await updates.received(1)).toEqual([
      { id: 'titled', title: 'Draft', metadata: { title: 'Draft' }, revision: 2 },
    ]);
    await updateTitle('titled', 'Final');
    expect(await updates.received(2)).toEqual([
      { id: 'titled', title: 'Draft', metadata: { title: 'Draft' }, revision: 2 },
      { id: 'titled', title: 'Final', metadata: { title: 'Final' }, revision: 3 },
    ]);
  });

  it('ends quick successive changes at the latest, never an older one after a newer', async () => {
    await append('retitled', 'first');
    const updates = subscribe(client(), UPDATED, { id: 'retitled' }, 'sessionUpdated');
    await eventually(() => channels.openCount === 1);

    // At once, so that on PostgreSQL several notices are handled after the same commits.
    const titles = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];
    await Promise.all(titles.map((title) => updateTitle('retitled', title)));

    const last = 1 + titles.length;
    await eventually(() => updates.events.at(-1)?.revision === last);
    const revisions = updates.events.map((session: { revision: number }) => session.revision);
    expect(revisions).toEqual([...new Set(revisions)].sort((a, b) => a - b));
    const read = await sut.gql(
      `query { session(id: "retitled") { id title metadata revision } }`,
      {},
      as('ro'),
    );
    expect(updates.events.at(-1)).toEqual(read.data.session);
    expect(read.data.session.revision).toBe(last);
  });

  describe('refuses, with a code, and goes on serving', () => {
    afterEach(async () => {
      // Whatever was refused, a well-formed subscription still works.
      const live = subscribe(client(), LIVE, { s: 'after-refusal' }, 'messageAppended');
      await eventually(() => channels.openCount === 1);
      await append('after-refusal', 'still here');
      expect((await live.received(1))[0].node.content).toBe('still here');
    });

    it('a connection without a token, or with a wrong one, is closed with 4401', async () => {
      for (const payload of [undefined, { authorization: 'Bearer nope' }, { authorization: 7 }]) {
        const raw = await rawSocket(url);
        raw.send({ type: 'connection_init', ...(payload ? { payload } : {}) });
        const closed = await raw.closed;
        expect(closed.code).toBe(4401);
        expect(closed.reason).toMatch(/Bearer|token/);
      }
    });

    it('a token without the read scope is FORBIDDEN', async () => {
      const refused = subscribe(client('ao'), LIVE, { s: 'x' }, 'messageAppended');
      await refused.ended;
      expect(errorCodes(refused.error)).toEqual(['FORBIDDEN']);
      expect(refused.events).toEqual([]);
    });

    it.each([
      ['a query', '{ sessions { totalCount } }', {}, 'BAD_REQUEST'],
      [
        'a mutation',
        'mutation { appendMessage(input: {sessionId: "w", role: USER, content: "x"}) { status } }',
        {},
        'BAD_REQUEST',
      ],
      ['an unknown field', 'subscription { nothing }', {}, 'BAD_USER_INPUT'],
      ['text that does not parse', 'subscription {', {}, 'GRAPHQL_PARSE_FAILED'],
      [
        'two operations, none named',
        'subscription A { messageAppended(sessionId: "a") { cursor } } subscription B { messageAppended(sessionId: "b") { cursor } }',
        {},
        'OPERATION_RESOLUTION_FAILURE',
      ],
      [
        'too many aliases',
        `subscription { messageAppended(sessionId: "a") { ${Array.from({ length: 31 }, (_, i) => `c${i}: cursor`).join(' ')} } }`,
        {},
        'QUERY_TOO_COMPLEX',
      ],
      [
        'too many tokens',
        `subscription { messageAppended(sessionId: "a") { ${'cursor '.repeat(1200)} } }`,
        {},
        'QUERY_TOO_COMPLEX',
      ],
      ['a session id that is not one', LIVE, { s: 'has space' }, 'BAD_USER_INPUT'],
      ['a NUL in the session id', LIVE, { s: 'a\u0000b' }, 'BAD_USER_INPUT'],
      ['a cursor that is not one', LIVE, { s: 'a', after: 'bm90LWEtY3Vyc29y' }, 'BAD_USER_INPUT'],
      ['a lone surrogate as cursor', LIVE, { s: 'a', after: '\ud800' }, 'BAD_USER_INPUT'],
      ['a variable of the wrong type', LIVE, { s: { deep: [1] } }, 'BAD_USER_INPUT'],
    ])('%s', async (_case, query, variables, code) => {
      const refused = subscribe(client(), query, variables, 'messageAppended');
      await refused.ended;
      // GraphQL Armor may report one rule's refusal more than once, as it does over HTTP.
      expect(new Set(errorCodes(refused.error))).toEqual(new Set([code]));
      expect(JSON.stringify(refused.error)).not.toMatch(/stack|at \//);
      expect(channels.openCount).toBe(0);
    });

    it('a WebSocket message past MAX_QUERY_BYTES is cut off with 1009', async () => {
      const raw = await authenticated(url, 'ro');
      raw.send({
        id: 'big',
        type: 'subscribe',
        payload: { query: `subscription { ${'x'.repeat(200 * 1024)} }` },
      });
      expect((await raw.closed).code).toBe(1009);
    });

    it('an upgrade to another path is answered 404', async () => {
      expect(await refusedUpgrade(url.replace('/graphql', '/elsewhere'))).toBe(404);
    });
  });
});

describe.each(databaseKinds())('subscription limits on %s', (database) => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;

  beforeAll(async () => {
    ({ sut, url, channels } = await listening(database, {
      ALLOW_ANONYMOUS: 'true',
      MAX_SUBSCRIPTIONS: '2',
      // The instance's cap, not a principal's or an address's (live-slots.e2e-spec.ts).
      MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '2',
      MAX_CONNECTIONS_PER_SOURCE: '2',
      SUBSCRIPTION_KEEPALIVE_MS: '200',
    }));
  });

  afterAll(() => sut.close());

  it('holds MAX_SUBSCRIPTIONS subscriptions and connections, refusing more with a code', async () => {
    const first = liveClient(url);
    const a = subscribe(first, LIVE, { s: 'a' }, 'messageAppended');
    const b = subscribe(first, LIVE, { s: 'b' }, 'messageAppended');
    await eventually(() => channels.openCount === 2);

    const c = subscribe(first, LIVE, { s: 'c' }, 'messageAppended');
    await c.ended;
    expect(errorCodes(c.error)).toEqual(['TOO_MANY_SUBSCRIPTIONS']);
    expect(c.events).toEqual([]);

    const second = await rawSocket(url);
    expect(await refusedUpgrade(url)).toBe(503);
    second.socket.close();
    await second.closed;

    a.stop();
    await eventually(() => channels.openCount === 1);
    const d = subscribe(first, LIVE, { s: 'd' }, 'messageAppended');
    await eventually(() => channels.openCount === 2);
    b.stop();
    d.stop();
    await first.dispose();
    await eventually(() => channels.openCount === 0);
  });

  it('refuses an anonymous connection from a page on another origin, not from its own', async () => {
    const foreign = await rawSocket(url, { headers: { origin: 'http://evil.example' } });
    foreign.send({ type: 'connection_init' });
    const closed = await foreign.closed;
    expect(closed.code).toBe(4403);
    expect(closed.reason).toMatch(/connectionParams.authorization/);

    const own = await rawSocket(url, { headers: { origin: `http://${new URL(url).host}` } });
    own.send({ type: 'connection_init' });
    expect((await own.next('connection_ack')).type).toBe('connection_ack');
    own.socket.close();
    await own.closed;
  });

  it('pings every SUBSCRIPTION_KEEPALIVE_MS and cuts a connection that does not answer', async () => {
    const silent = await rawSocket(url, { autoPong: false });
    silent.send({ type: 'connection_init' });
    await silent.next('connection_ack');
    const pinged = new Promise<void>((resolve) => silent.socket.once('ping', () => resolve()));
    await pinged;
    expect((await silent.closed).code).toBe(1006);

    const answering = await rawSocket(url);
    answering.send({ type: 'connection_init' });
    await answering.next('connection_ack');
    let pings = 0;
    await new Promise<void>((resolve) =>
      answering.socket.on('ping', () => {
        if (++pings === 3) resolve();
      }),
    );
    expect(answering.socket.readyState).toBe(answering.socket.OPEN);
    answering.socket.close();
  });
});

describe.each(databaseKinds())('shutdown with subscribers on %s', (database) => {
  it('tells each subscriber why, then closes its socket with 1001 and a reason', async () => {
    const { sut, url, channels } = await listening(database, { ALLOW_ANONYMOUS: 'true' });
    const raw = await rawSocket(url);
    raw.send({ type: 'connection_init' });
    await raw.next('connection_ack');
    raw.send({ id: 's', type: 'subscribe', payload: { query: LIVE, variables: { s: 'bye' } } });
    await eventually(() => channels.openCount === 1);

    await sut.close();

    const told = await raw.next('error');
    expect(told.id).toBe('s');
    expect(errorCodes(told.payload)).toEqual(['SERVICE_UNAVAILABLE']);
    expect(told.payload[0].message).toMatch(/shutting down/);
    const closed = await raw.closed;
    expect(closed).toEqual({ code: 1001, reason: expect.stringMatching(/shutting down/) });
  });
});

/** A raw connection, acknowledged with `token`. */
async function authenticated(url: string, token: string): Promise<RawSocket> {
  const raw = await rawSocket(url);
  raw.send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } });
  await raw.next('connection_ack');
  return raw;
}
