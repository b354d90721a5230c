import { JwtService } from '@nestjs/jwt';
import { LiveChannels } from '../src/live/live-channels.js';
import { eventually, rawSocket, refusedUpgrade } from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// Regressions for what an attack on the WebSocket found (one per finding): each test fails on
// the code before its fix.
const LIVE = `subscription($s: ID!) { messageAppended(sessionId: $s) { node { id } } }`;
const SECRET = 'live-abuse-secret-live-abuse-secret';
const jwt = new JwtService();
const as = (token: string) => ({ authorization: `Bearer ${token}` });

async function listening(variables: Record<string, string>) {
  const sut = await createTestApp('sqlite', variables);
  await sut.app.listen(0, '127.0.0.1');
  const url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
  return { sut, url, channels: sut.app.get(LiveChannels) };
}

async function acknowledged(url: string, authorization?: string) {
  const raw = await rawSocket(url);
  raw.send({ type: 'connection_init', ...(authorization ? { payload: { authorization } } : {}) });
  await raw.next('connection_ack');
  return raw;
}

describe('the WebSocket endpoint against abuse', () => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;

  beforeAll(async () => {
    ({ sut, url, channels } = await listening({
      API_TOKENS: 'rw=read+append',
      JWT_SECRET: SECRET,
      MAX_SUBSCRIPTIONS: '8',
      MAX_CONNECTIONS_PER_SOURCE: '8',
      MAX_REFUSALS_PER_MINUTE: '5',
    }));
  });

  afterAll(() => sut.close());

  it('a subscription id completed while it starts and sent again closes the connection (4409), and leaks no slot', async () => {
    const raw = await acknowledged(url, 'Bearer rw');
    for (let round = 0; round < 5; round++) {
      const payload = { query: LIVE, variables: { s: 'victim' } };
      raw.send({ id: 'x', type: 'subscribe', payload });
      raw.send({ id: 'x', type: 'complete' });
      raw.send({ id: 'x', type: 'subscribe', payload });
    }
    expect((await raw.closed).code).toBe(4409);
    await eventually(() => channels.openCount === 0);
  });

  it('a connection whose JWT expires is closed with 4401, its subscriptions with it', async () => {
    // Whole seconds: 1 would leave 0 to 1 s, less than a loaded machine takes to subscribe.
    const token = jwt.sign({ scope: 'read' }, { secret: SECRET, expiresIn: 4 });
    const raw = await acknowledged(url, `Bearer ${token}`);
    raw.send({ id: 's', type: 'subscribe', payload: { query: LIVE, variables: { s: 'timed' } } });
    await eventually(() => channels.openCount === 1);
    const closed = await raw.closed;
    expect(closed).toEqual({ code: 4401, reason: expect.stringMatching(/expired/) });
    await eventually(() => channels.openCount === 0);
  });
});

describe('a client that never reads', () => {
  it('is cut once its unread answers pass SUBSCRIPTION_BUFFER_BYTES', async () => {
    const { sut, url } = await listening({
      API_TOKENS: 'rw=read+append',
      MAX_REFUSALS_PER_MINUTE: '0',
      SUBSCRIPTION_BUFFER_BYTES: String(64 * 1024),
    });
    try {
      const raw = await acknowledged(url, 'Bearer rw');
      (raw.socket as unknown as { _socket: { pause(): void } })._socket.pause();
      // Each refusal is answered with more bytes than it asked (an error per unknown field).
      const fields = Array.from({ length: 10 }, (_, index) => `unknown${index}`).join(' ');
      let sent = 0;
      while (raw.socket.readyState === raw.socket.OPEN && sent < 200_000) {
        raw.send({
          id: `q${sent++}`,
          type: 'subscribe',
          payload: { query: `subscription { ${fields} }` },
        });
        if (sent % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      (raw.socket as unknown as { _socket: { resume(): void } })._socket.resume();
      // Cut, not closed: no close frame could get through the unread bytes.
      expect((await raw.closed).code).toBe(1006);
      expect(sent).toBeLessThan(200_000);
    } finally {
      await sut.close();
    }
  });
});

// Found by the stranger's attack on issue 24's write batching: frames held for one turn were
// counted as unread, so a client that read everything was cut by the second large frame of a
// commit, and again each time it resumed with `after`.
describe('a client that reads everything, sent large frames in one turn', () => {
  const PAGE = `query($id: ID!) { session(id: $id) { messages(first: 10) { edges { cursor } } } }`;
  const APPENDS = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
  const RESUME = `subscription($s: ID!, $after: String) {
    messageAppended(sessionId: $s, after: $after) { cursor node { content } }
  }`;
  // 12,000 control characters: 24 KB as the feed counts them, 72 KB of JSON a frame.
  const content = '\u0001'.repeat(12_000);
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;

  beforeAll(async () => {
    ({ sut, url, channels } = await listening({
      API_TOKENS: 'rw=read+append',
      SUBSCRIPTION_BUFFER_BYTES: String(64 * 1024),
    }));
  });
  afterAll(() => sut.close());

  const appendTwo = async (sessionId: string) => {
    const messages = [
      { role: 'USER', content },
      { role: 'USER', content },
    ];
    const answer = await sut.gql(APPENDS, { input: { sessionId, messages } }, as('rw'));
    expect(answer.data?.appendMessages?.status).toBe('PERSISTED');
  };

  it('gets both messages of one commit live', async () => {
    const raw = await acknowledged(url, 'Bearer rw');
    raw.send({ id: '1', type: 'subscribe', payload: { query: RESUME, variables: { s: 'big-1' } } });
    await eventually(() => channels.openCount === 1);
    await appendTwo('big-1');
    for (let i = 0; i < 2; i++) {
      const event = await raw.next('next');
      expect(event.payload.data.messageAppended.node.content).toBe(content);
    }
    raw.socket.close();
    await raw.closed;
  });

  it('gets them replayed, each time it resumes with after', async () => {
    await sut.gql(
      APPENDS,
      { input: { sessionId: 'big-2', messages: [{ role: 'USER', content: 'small' }] } },
      as('rw'),
    );
    const after = (await sut.gql(PAGE, { id: 'big-2' }, as('rw'))).data.session.messages.edges[0]
      .cursor as string;
    await appendTwo('big-2');
    for (let attempt = 0; attempt < 3; attempt++) {
      const raw = await acknowledged(url, 'Bearer rw');
      raw.send({
        id: '1',
        type: 'subscribe',
        payload: { query: RESUME, variables: { s: 'big-2', after } },
      });
      for (let i = 0; i < 2; i++) {
        const event = await raw.next('next');
        expect(event.payload.data.messageAppended.node.content).toBe(content);
      }
      raw.socket.close();
      expect((await raw.closed).code).toBe(1005);
    }
  });
});

describe('the refusal budget on the WebSocket', () => {
  it('refused credentials spend it; past it, upgrades are answered 429', async () => {
    const { sut, url } = await listening({
      API_TOKENS: 'rw=read+append',
      MAX_REFUSALS_PER_MINUTE: '3',
    });
    try {
      for (let guess = 0; guess < 3; guess++) {
        const raw = await rawSocket(url);
        raw.send({ type: 'connection_init', payload: { authorization: `Bearer guess-${guess}` } });
        expect((await raw.closed).code).toBe(4401);
      }
      expect(await refusedUpgrade(url)).toBe(429);
      // Over HTTP too: it is one budget.
      expect((await sut.gql('{ __typename }')).status).toBe(429);
    } finally {
      await sut.close();
    }
  });

  it('refused operations spend it, and the connection ends with 4429 once it is spent', async () => {
    const { sut, url } = await listening({
      API_TOKENS: 'rw=read+append',
      MAX_REFUSALS_PER_MINUTE: '3',
    });
    try {
      const raw = await acknowledged(url, 'Bearer rw');
      for (let index = 0; index < 3; index++) {
        raw.send({ id: `bad${index}`, type: 'subscribe', payload: { query: 'subscription {' } });
      }
      // The refusals sent before the close may not get out ahead of it; the close says why.
      expect(await raw.closed).toEqual({
        code: 4429,
        reason: expect.stringMatching(/MAX_REFUSALS_PER_MINUTE/),
      });
      expect(await refusedUpgrade(url)).toBe(429);
    } finally {
      await sut.close();
    }
  });
});

describe('connections that never say who they are', () => {
  it('may hold a quarter of MAX_SUBSCRIPTIONS; the rest stay for clients that do', async () => {
    const { sut, url } = await listening({
      ALLOW_ANONYMOUS: 'true',
      MAX_SUBSCRIPTIONS: '8',
      MAX_CONNECTIONS_PER_SOURCE: '8',
    });
    try {
      const silent = [await rawSocket(url), await rawSocket(url)];
      expect(await refusedUpgrade(url)).toBe(503);
      silent[0].socket.close();
      await silent[0].closed;
      const speaking = await acknowledged(url);
      // Acknowledged connections do not count against the quarter.
      const more = [await acknowledged(url), await acknowledged(url)];
      for (const raw of [silent[1], speaking, ...more]) raw.socket.close();
    } finally {
      await sut.close();
    }
  });
});
