import { getIntrospectionQuery } from 'graphql';
import http from 'node:http';
import request from 'supertest';
import { faultSuite, READ } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';
import { type GqlResponse } from './support/test-app.js';

// Hostile requests against a real server process: each is refused before it costs anything,
// with its own code and an HTTP status that is never 500; nothing is written; the server goes
// on answering; and a loop of them leaves the log quiet. Legitimate large work still passes.
const { faultTest, server, dataDirectory } = faultSuite(120_000);
const ADMIN_TOKEN = 'abuse-admin-token';
const APPEND_MANY = `mutation($input: AppendMessagesInput!) {
  appendMessages(input: $input) { status messages { id } }
}`;
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const STACK = /\bat .*\.(js|ts):\d+|node_modules|\/src\//;

const aliases = (count: number, session = 'victim') =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: session(id: "${session}") { messages(first: 1) { totalCount } }`).join(' ')} }`;

function nestedFragments(count: number): string {
  let text = 'query { ...F0 }\n';
  for (let i = 0; i < count; i++) text += `fragment F${i} on Query { ...F${i + 1} }\n`;
  return `${text}fragment F${count} on Query { __typename }\n`;
}

function keys(count: number): Record<string, number> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));
}

function nestedJson(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < depth; level++) value = { k: value };
  return value;
}

/** A request body written as text: deeper than JSON.stringify can go in this process. */
async function postRaw(sut: ServerProcess, body: string): Promise<GqlResponse> {
  const response = await request(sut.url)
    .post('/graphql')
    .set('content-type', 'application/json')
    .send(body);
  const parsed = response.body ?? {};
  return { status: response.status, data: parsed.data, errors: parsed.errors, body: parsed };
}

/** One POST from a given local address (all of 127.0.0.0/8 reaches the server on loopback). */
function postFrom(
  sut: ServerProcess,
  localAddress: string,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
): Promise<GqlResponse & { headers: http.IncomingHttpHeaders }> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      new URL('/graphql', sut.url),
      {
        method: 'POST',
        localAddress,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        response.on('end', () => {
          const parsed = JSON.parse(text);
          resolve({
            status: response.statusCode ?? 0,
            data: parsed.data,
            errors: parsed.errors,
            body: parsed,
            headers: response.headers,
          });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

interface Attack {
  name: string;
  send: (sut: ServerProcess) => Promise<GqlResponse>;
  status: number;
  code: string;
}

const ATTACKS: Attack[] = [
  {
    name: '1,000 aliased full reads in one request',
    send: (sut) => sut.gql(aliases(1000, 'v')),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: 'one full read more than MAX_FULL_READS_PER_REQUEST',
    send: (sut) => sut.gql(aliases(11)),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: 'a list of sessions, each with its transcript',
    send: (sut) =>
      sut.gql('{ sessions(first: 50) { edges { node { messages(first: 1) { totalCount } } } } }'),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: '2,000 nested fragments (over MAX_QUERY_BYTES)',
    send: (sut) => sut.gql(nestedFragments(2000)),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: '1,200 nested fragments (under MAX_QUERY_BYTES, over MAX_QUERY_TOKENS)',
    send: (sut) => sut.gql(nestedFragments(1200)),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: 'an 11 MB query document',
    send: (sut) => sut.gql(`{ __typename ${' '.repeat(11 * 1024 * 1024)}}`),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: '6,000 tokens in 12 KB',
    send: (sut) => sut.gql(`{ ${'a '.repeat(6000)}}`),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: '60 directives on one field',
    send: (sut) => sut.gql(`{ __typename ${'@skip(if: false) '.repeat(60)}}`),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: 'metadata with 60,000 keys',
    send: (sut) =>
      sut.gql(APPEND, {
        input: { sessionId: 'victim', role: 'USER', content: 'x', metadata: keys(60_000) },
      }),
    status: 400,
    code: 'BAD_USER_INPUT',
  },
  {
    name: 'metadata with 1,200 keys in two objects (each within the body bound)',
    send: (sut) =>
      sut.gql(APPEND, {
        input: {
          sessionId: 'victim',
          role: 'USER',
          content: 'x',
          metadata: { a: keys(600), b: keys(600) },
        },
      }),
    status: 200,
    code: 'BAD_USER_INPUT',
  },
  {
    name: 'a batch of 400,000 messages (a list past MAX_INPUT_LIST_ITEMS)',
    send: (sut) =>
      sut.gql(APPEND_MANY, {
        input: {
          sessionId: 'victim',
          messages: Array.from({ length: 400_000 }, () => ({ role: 'USER', content: 'x' })),
        },
      }),
    status: 400,
    code: 'BAD_USER_INPUT',
  },
  {
    name: 'a body declared UTF-16 (the checks on its bytes would not read it)',
    send: async (sut) => {
      const response = await request(sut.url)
        .post('/graphql')
        .set('content-type', 'application/json; charset=utf-16')
        .send(Buffer.from(JSON.stringify({ query: '{ __typename }' }), 'utf16le'));
      const parsed = response.body ?? {};
      return { status: response.status, data: parsed.data, errors: parsed.errors, body: parsed };
    },
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'a second value after the body (its counts must not start over)',
    send: (sut) =>
      postRaw(sut, `{"query":"{ __typename }"}}${JSON.stringify({ a: keys(60_000) })}`),
    status: 400,
    code: 'BAD_REQUEST',
  },
  {
    name: '250,000 empty objects in the variables (each within every per-object bound)',
    send: (sut) =>
      postRaw(
        sut,
        `{"query":"{ __typename }","variables":{"x":[${Array<string>(250_000).fill('{}').join(',')}]}}`,
      ),
    status: 400,
    code: 'BAD_USER_INPUT',
  },
  {
    name: 'one field under 29 aliases (an answer 29 times the page)',
    send: (sut) =>
      sut.gql(
        `{ session(id: "victim") { messages(first: 10) { edges { node { ${Array.from({ length: 29 }, (_, i) => `c${i}: content`).join(' ')} } } } } }`,
      ),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  {
    name: 'toolCalls nested 10,000 levels deep',
    send: (sut) =>
      postRaw(
        sut,
        `{"query":${JSON.stringify(APPEND)},"variables":{"input":{"sessionId":"victim","role":"USER","content":"x","toolCalls":${'{"k":'.repeat(10_000)}1${'}'.repeat(10_000)}}}}`,
      ),
    status: 400,
    code: 'BAD_USER_INPUT',
  },
];

async function transcript(sut: ServerProcess): Promise<unknown> {
  const response = await sut.gql(READ, { id: 'victim' });
  expect(response.errors).toBeUndefined();
  return response.data;
}

describe('hostile requests', () => {
  faultTest(
    'each attack is refused with its code and status, writes nothing, and the server goes on answering',
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), ADMIN_TOKEN });
      const seeded = await sut.gql(APPEND_MANY, {
        input: {
          sessionId: 'victim',
          messages: [1, 2, 3].map((n) => ({ role: 'USER', content: `m${n}` })),
        },
      });
      expect(seeded.data.appendMessages.status).toBe('PERSISTED');
      const before = await transcript(sut);

      for (const attack of ATTACKS) {
        const response = await attack.send(sut);
        expect({ attack: attack.name, status: response.status }).toEqual({
          attack: attack.name,
          status: attack.status,
        });
        expect({ attack: attack.name, code: response.errors?.[0]?.extensions?.code }).toEqual({
          attack: attack.name,
          code: attack.code,
        });
        expect(JSON.stringify(response.body)).not.toMatch(STACK);
        expect((await sut.gql('{ __typename }')).data).toEqual({ __typename: 'Query' });
      }

      expect(await transcript(sut)).toEqual(before);
      const sessions = await sut.gql('{ sessions(first: 10) { totalCount } }');
      expect(sessions.data.sessions.totalCount).toBe(1);
    },
  );

  faultTest('the limits let legitimate large work through', async () => {
    const sut = await server({ DATA_DIR: await dataDirectory(), NODE_ENV: 'development' });
    const messages = Array.from({ length: 1000 }, (_, i) => ({
      role: 'USER',
      content: `message ${i}`,
      clientMessageId: `c-${i}`,
      metadata: { index: i, tags: ['a', 'b'] },
    }));
    const batch = await sut.gql(APPEND_MANY, { input: { sessionId: 'large', messages } });
    expect(batch.errors).toBeUndefined();
    expect(batch.data.appendMessages.messages).toHaveLength(1000);

    const page = await sut.gql(READ, { id: 'large' });
    expect(page.errors).toBeUndefined();
    expect(page.data.session.messages.edges).toHaveLength(1000);

    const tenReads = await sut.gql(aliases(10, 'large'));
    expect(tenReads.errors).toBeUndefined();

    const introspection = await sut.gql(getIntrospectionQuery());
    expect(introspection.status).toBe(200);
    expect(introspection.errors).toBeUndefined();
    expect(introspection.data.__schema.queryType.name).toBe('Query');
  });

  faultTest(
    'a session larger than SESSION_CACHE_MAX_BYTES is read page by page and never cached whole',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ADMIN_TOKEN,
        SESSION_CACHE_MAX_BYTES: String(1024 * 1024),
      });
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      // 1,000 messages of 1,000 characters: about 2.2 MB on the heap by the estimate.
      const messages = Array.from({ length: 1000 }, (_, i) => ({
        role: 'USER',
        content: `${String(i).padStart(4, '0')}${'x'.repeat(996)}`,
      }));
      await sut.gql(APPEND_MANY, { input: { sessionId: 'big', messages } });
      await sut.gql(APPEND_MANY, { input: { sessionId: 'small', messages: messages.slice(0, 3) } });
      const PAGE = `query($after: String) { session(id: "big") { messageCount messages(first: 400, after: $after) { pageInfo { hasNextPage endCursor } edges { node { content } } } } }`;

      const seen: string[] = [];
      let after: string | null = null;
      for (let page = 0; page < 3; page++) {
        const response: GqlResponse = await sut.gql(PAGE, { after });
        expect(response.errors).toBeUndefined();
        const connection = response.data.session.messages as {
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
          edges: { node: { content: string } }[];
        };
        seen.push(...connection.edges.map((edge) => edge.node.content.slice(0, 4)));
        after = connection.pageInfo.endCursor;
        expect(connection.pageInfo.hasNextPage).toBe(page < 2);
      }
      expect(seen).toEqual(messages.map((message) => message.content.slice(0, 4)));

      await sut.gql(`{ session(id: "small") { messages(first: 5) { totalCount } } }`);
      const gate = await sut.gql(`{ gateStatus { cacheSize } }`, {}, admin);
      // The small session is cached; the big one never was.
      expect(gate.data.gateStatus.cacheSize).toBe(1);
    },
  );

  faultTest(
    "no caller's variables decide another's verdict, and a skipped transcript is not loaded",
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), ADMIN_TOKEN });
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const shared = `mutation Append($i: AppendMessageInput!) { appendMessage(input: $i) { status } }`;
      const bad = await sut.gql(shared, { i: { sessionId: 'x', role: 'NOPE', content: 'x' } });
      expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      const good = await sut.gql(shared, {
        i: { sessionId: 'victim', role: 'USER', content: 'ok' },
      });
      expect(good.errors).toBeUndefined();

      const skipping = `query($x: Boolean!) { sessions(first: 1000) { edges { node { messages(first: 1000) @include(if: $x) { totalCount } } } } }`;
      expect((await sut.gql(skipping, { x: false })).errors).toBeUndefined();
      const costly = await sut.gql(skipping, { x: true });
      expect(costly.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');

      const skipped = `{ ${Array.from({ length: 15 }, (_, i) => `s${i}: session(id: "victim") { id messages(first: 1) @skip(if: true) { totalCount } }`).join(' ')} }`;
      expect((await sut.gql(skipped)).errors).toBeUndefined();
      const gate = await sut.gql(`{ gateStatus { cacheSize } }`, {}, admin);
      expect(gate.data.gateStatus.cacheSize).toBe(0);
    },
  );

  faultTest('field suggestions are given in development only', async () => {
    const production = await server({ DATA_DIR: await dataDirectory() });
    const development = await server({
      DATA_DIR: await dataDirectory(),
      NODE_ENV: 'development',
    });
    const typo = '{ sesion(id: "x") { id } }';

    const hidden = await production.gql(typo);
    expect(hidden.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(hidden.errors?.[0]?.message).toMatch(/Cannot query field "sesion"/);
    expect(hidden.errors?.[0]?.message).not.toMatch(/Did you mean|"session"/);

    const shown = await development.gql(typo);
    expect(shown.errors?.[0]?.message).toMatch(/Did you mean "session"/);
  });

  faultTest(
    'a thousand bad requests of each kind leave no ERROR line and fewer than 20 WARN lines',
    async () => {
      // The refusal budget is off: every one of these requests must reach the path it logs on.
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ADMIN_TOKEN,
        MAX_REFUSALS_PER_MINUTE: '0',
      });
      const admin =
        '{ pendingStatus { totalPending } spoolStatus { messages } gateStatus { inFlight } }';
      const kinds: [string, () => Promise<GqlResponse>][] = [
        [
          'bad input',
          () => sut.gql(APPEND, { input: { sessionId: 'bad id', role: 'USER', content: 'x' } }),
        ],
        ['no token', () => sut.gql(admin)],
        ['wrong token', () => sut.gql(admin, {}, { authorization: 'Bearer wrong' })],
        ['too complex', () => sut.gql(aliases(40))],
        ['parse error', () => sut.gql('{ session(id: ')],
        ['unknown field', () => sut.gql('{ nonsense }')],
        ['too many tokens', () => sut.gql(`{ ${'a '.repeat(6000)}}`)],
        ['too large', () => sut.gql(`{ ${' '.repeat(70_000)}__typename }`)],
        [
          'bad metadata',
          () =>
            sut.gql(APPEND, {
              input: { sessionId: 's', role: 'USER', content: 'x', metadata: nestedJson(50) },
            }),
        ],
      ];
      const startedAt = sut.output().length;
      for (const [kind, send] of kinds) {
        let next = 0;
        const worker = async () => {
          while (next++ < 1000) {
            const response = await send();
            expect({ kind, errors: (response.errors ?? []).length > 0 }).toEqual({
              kind,
              errors: true,
            });
            expect(response.status).not.toBe(500);
          }
        };
        await Promise.all(Array.from({ length: 16 }, worker));
      }
      expect((await sut.gql('{ __typename }')).data).toEqual({ __typename: 'Query' });
      // Logged as a refusal is answered, on a pipe the answers can overtake: waited for.
      await sut.waitForOutput(
        /Refused a request from \S+: UNAUTHENTICATED: pendingStatus needs Authorization/,
      );

      // ERROR lines come on stderr, which no line waited for orders: all of it is read once
      // the server has stopped, its pipes closed.
      await sut.stop();
      const lines = sut.output().slice(startedAt).split('\n');
      expect(lines.filter((line) => / ERROR /.test(line))).toEqual([]);
      const warnings = lines.filter((line) => / WARN /.test(line));
      expect(warnings.length).toBeLessThan(20);
      // The token refusals were seen, once, and say so.
      expect(warnings).toEqual([
        expect.stringMatching(
          /Refused a request from \S+: UNAUTHENTICATED: pendingStatus needs Authorization/,
        ),
      ]);
    },
  );

  faultTest(
    'a source that keeps being refused is turned away unread, and no other source is',
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), MAX_REFUSALS_PER_MINUTE: '5' });
      const honest = '127.0.0.3';
      const abuser = '127.0.0.2';
      // Successful requests never spend a budget, however many.
      for (let i = 0; i < 20; i++) {
        expect((await postFrom(sut, honest, { query: '{ __typename }' })).status).toBe(200);
      }
      for (let i = 0; i < 5; i++) {
        const refused = await postFrom(sut, abuser, { query: '{ nonsense }' });
        expect(refused.status).toBe(400);
        expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      }
      // Spent: even a valid request of the same source is turned away, and writes nothing.
      const append = {
        query: APPEND,
        variables: { input: { sessionId: 'limited', role: 'USER', content: 'x' } },
      };
      const turnedAway = await postFrom(sut, abuser, append);
      expect(turnedAway.status).toBe(429);
      expect(turnedAway.errors).toEqual([
        {
          message:
            'Too many refused requests from this address: more than 5 a minute (MAX_REFUSALS_PER_MINUTE). Retry after 12 s.',
          extensions: { code: 'RATE_LIMITED' },
        },
      ]);
      expect(turnedAway.headers['retry-after']).toBe('12');
      expect(turnedAway.headers.connection).toBe('close');
      expect((await postFrom(sut, honest, { query: '{ __typename }' })).status).toBe(200);
      const stored = await postFrom(sut, honest, {
        query: '{ session(id: "limited") { messageCount } }',
      });
      expect(stored.data).toEqual({ session: null });
      // Logged as the 429 is answered, on a pipe the answers can overtake: waited for.
      await sut.waitForOutput(/Turning away requests from 127\.0\.0\.2/);
      expect(sut.output().match(/Turning away requests from 127\.0\.0\.2/g)).toHaveLength(1);
      // ERROR lines come on stderr, which the line above does not order: read once it is closed.
      await sut.stop();
      expect(sut.output()).not.toMatch(/\bERROR\b/);
    },
  );
  faultTest(
    'a set-aside entry not found spends no refusal budget; a session not found does',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ADMIN_TOKEN,
        MAX_REFUSALS_PER_MINUTE: '3',
      });
      const operator = '127.0.0.4';
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      // The entry may have been dropped or re-driven already, by another operator or the drain:
      // the server's state, not the caller's doing, and it tells nothing of a session.
      for (const action of ['dropSetAside', 'reDriveSetAside', 'dropSetAside', 'reDriveSetAside']) {
        const closed = await postFrom(
          sut,
          operator,
          { query: `mutation { ${action}(input: { id: "0123456789abcdef" }) { id } }` },
          admin,
        );
        expect(closed.status).toBe(200);
        expect(closed.errors).toEqual([
          expect.objectContaining({
            message:
              'No open set-aside entry 0123456789abcdef (among the newest spoolStatus lists): it may have been dropped or re-driven already',
            extensions: { code: 'NOT_FOUND', field: 'input.id' },
          }),
        ]);
      }
      // A session not found tells a guesser something: each spends one.
      const update = {
        query: 'mutation { updateSession(input: { id: "nope", title: "t" }) { id } }',
      };
      for (let i = 0; i < 3; i++) {
        const missing = await postFrom(sut, operator, update, admin);
        expect(missing.status).toBe(200);
        expect(missing.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', field: 'input.id' });
      }
      const turnedAway = await postFrom(sut, operator, update, admin);
      expect(turnedAway.status).toBe(429);
      expect(turnedAway.errors?.[0]?.extensions).toEqual({ code: 'RATE_LIMITED' });
    },
  );
});
