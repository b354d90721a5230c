import { jest } from '@jest/globals';
import { JwtService } from '@nestjs/jwt';
import { LiveChannels } from '../src/live/live-channels.js';
import { eventually, rawSocket, type RawSocket } from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// A hostile client on the graphql-ws endpoint: what it tries here is refused with a code, leaks
// nothing of another session, and leaves no subscriber behind.
const SECRET = 'live-attacks-secret-0123456789abcdef';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) =>
  `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`;
const WRITER = { authorization: 'Bearer writer-token' };
const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { id content } }
}`;
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;

const codesOf = (message: any): unknown[] => {
  const errors = message.type === 'error' ? message.payload : message.payload?.errors;
  return (errors ?? []).map((error: any) => error.extensions?.code);
};

describe('graphql-ws under attack', () => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;
  const sockets: RawSocket[] = [];

  beforeAll(async () => {
    sut = await createTestApp('sqlite', {
      JWT_SECRET: SECRET,
      API_TOKENS: 'writer-token=read+append',
    });
    await sut.app.listen(0, '127.0.0.1');
    url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
    channels = sut.app.get(LiveChannels);
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.socket.terminate();
    await eventually(() => channels.openCount === 0);
  });

  afterAll(() => sut.close());

  async function connected(authorization: string): Promise<RawSocket> {
    const socket = await rawSocket(url);
    sockets.push(socket);
    socket.send({ type: 'connection_init', payload: { authorization } });
    await socket.next('connection_ack');
    return socket;
  }

  /** The first answer to subscription `id`: a `next` with errors, or an `error`. */
  async function answerTo(socket: RawSocket, id: string): Promise<any> {
    await eventually(() => socket.messages.some((message) => message.id === id));
    return socket.messages.find((message) => message.id === id);
  }

  test('a JWT limited to a prefix reaches no other session, however the field is written', async () => {
    await sut.gql(
      APPEND,
      { input: { sessionId: 'other-1', role: 'USER', content: 'not yours' } },
      WRITER,
    );
    const socket = await connected(bearer({ scope: 'read', session_prefix: 'u1-' }));
    const attempts: Record<string, [string, Record<string, unknown>]> = {
      variables: [LIVE, { s: 'other-1', after: null }],
      alias: ['subscription { x: messageAppended(sessionId: "other-1") { cursor } }', {}],
      fragment: [
        'subscription { ...F } fragment F on Subscription { messageAppended(sessionId: "other-1") { cursor } }',
        {},
      ],
      inline: [
        'subscription { ... on Subscription { messageAppended(sessionId: "other-1") { cursor } } }',
        {},
      ],
      sessionUpdated: [
        'subscription($i: ID!) { sessionUpdated(id: $i) { id title } }',
        { i: 'other-1' },
      ],
      twoRoots: [
        'subscription { a: messageAppended(sessionId: "u1-a") { cursor } b: messageAppended(sessionId: "other-1") { cursor } }',
        {},
      ],
    };
    for (const [id, [query, variables]] of Object.entries(attempts)) {
      socket.send({ id, type: 'subscribe', payload: { query, variables } });
    }
    for (const id of Object.keys(attempts)) {
      const answer = await answerTo(socket, id);
      expect(codesOf(answer)).toEqual([id === 'twoRoots' ? 'BAD_USER_INPUT' : 'FORBIDDEN']);
    }
    await sut.gql(
      APPEND,
      { input: { sessionId: 'other-1', role: 'USER', content: 'still not yours' } },
      WRITER,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(JSON.stringify(socket.messages)).not.toContain('yours');
    expect(channels.openCount).toBe(0);
  });

  test('bad frames close the socket with a code, and nothing reaches the console', async () => {
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const closes: number[] = [];
      const invalidJson = await rawSocket(url);
      invalidJson.socket.send('{nope');
      closes.push((await invalidJson.closed).code);
      const oversized = await rawSocket(url);
      oversized.socket.send('x'.repeat(sut.config.queryLimits.maxBytes + 32 * 1024));
      closes.push((await oversized.closed).code);
      const notUtf8 = await rawSocket(url);
      // One masked text frame (mask key 0) whose payload is not UTF-8.
      const frame = Buffer.from([0x81, 0x82, 0, 0, 0, 0, 0xff, 0xfe]);
      (notUtf8.socket as unknown as { _socket: NodeJS.WritableStream })._socket.write(frame);
      closes.push((await notUtf8.closed).code);
      expect(closes).toEqual([4400, 1009, 1007]);
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
  });

  test('lone surrogates and NUL in every argument are refused with a code', async () => {
    const socket = await connected('Bearer writer-token');
    const cursorOf = (text: string) => Buffer.from(text).toString('base64url');
    const attempts: Record<string, Record<string, unknown>> = {
      session: { query: LIVE, variables: { s: 'a\ud800' } },
      sessionNul: { query: LIVE, variables: { s: 'a\u0000' } },
      after: { query: LIVE, variables: { s: 'ok', after: '\ud800\u0000' } },
      afterDecoded: {
        query: LIVE,
        variables: { s: 'ok', after: cursorOf('scribe:v1:\u0000\ud800') },
      },
      operationName: { query: LIVE, operationName: '\ud800', variables: { s: 'ok' } },
      inline: {
        query: 'subscription { messageAppended(sessionId: "ok", after: "\\ud800") { cursor } }',
      },
    };
    for (const [id, payload] of Object.entries(attempts)) {
      socket.send({ id, type: 'subscribe', payload });
    }
    for (const id of Object.keys(attempts)) {
      const codes = codesOf(await answerTo(socket, id));
      expect(codes.length).toBe(1);
      expect(['BAD_USER_INPUT', 'GRAPHQL_PARSE_FAILED', 'OPERATION_RESOLUTION_FAILURE']).toContain(
        codes[0],
      );
    }
    socket.send({ type: 'ping' });
    await socket.next('pong');
  });
});
