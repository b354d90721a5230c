import { Controller, Get, Module, Param } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { ScribeHttpFront } from '../src/common/http/scribe-http-front.js';
import { deferred } from '../src/common/testing/deferred.js';
import { scribeOptionsFromEnvironment } from '../src/config/scribe-options-from-environment.js';
import { SessionQueries } from '../src/database/session-queries.js';
import { EXPORT_DRAIN_TIMEOUT_MS } from '../src/export/export.tokens.js';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';
import { createPostgresSchema, databaseKinds, type DatabaseKind } from './support/databases.js';
import {
  AcceptedConnections,
  interceptCalls,
  LogWatch,
  RawGet,
  type RawAnswer,
} from './support/raw-export.js';
import { createTestApp, type TestApp } from './support/test-app.js';
import { hostGraphQLModule } from './support/host-graphql.js';

// GET /sessions/{id}/export: a stored transcript streamed as JSON Lines, JSON or Markdown,
// behind the same credentials, scopes, session prefixes and HTTP steps as /graphql; a reader
// that stops reading is cut, one that goes away stops the reads, a database that fails
// mid-stream cuts the transfer rather than end a short file.
const SECRET = 'export-suite-secret-of-32-bytes!';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>, expiresIn = 300) =>
  `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn })}`;
const ORIGIN = 'https://chat.example.com';
const VARIABLES = {
  API_TOKENS: 'ro=read,ap=append,ops=admin',
  JWT_SECRET: SECRET,
  CORS_ORIGINS: ORIGIN,
};
const ADMIN = { authorization: 'Bearer ops' };
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
const UPDATE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { id } }`;
const READ = `query($id: ID!, $after: String) {
  session(id: $id) {
    id title metadata createdAt updatedAt messageCount revision
    messages(first: 500, after: $after) {
      pageInfo { hasNextPage endCursor }
      edges { node {
        id sessionId status role content clientMessageId toolName toolCallId toolCalls metadata createdAt
        revision editedAt redacted redactedAt redactionReason
      } }
    }
  }
}`;

// Astral characters, combining marks, scripts of both directions, line and paragraph
// separators, zero-width characters, Markdown and JSON's own characters; no NUL.
const TEXTS = [
  'plain ASCII',
  'astral 😀 🧑‍🚀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀',
  'combining e\u0301 n\u0303 a\u030A\u0301, precomposed é',
  '漢字 かな 한국어',
  'right to left שלום مرحبا',
  'breaks\nand\r\nlines\tand tabs',
  'separators \u2028 and \u2029',
  'quotes " \\ ` ``` and <b>tags</b>',
  'zero width \u200B\u200D\uFEFF',
  '### a heading in the content',
];
const ROLES = ['USER', 'ASSISTANT', 'TOOL', 'SYSTEM'];

function input(index: number, content = `${index}: ${TEXTS[index % TEXTS.length]}`) {
  return {
    role: ROLES[index % ROLES.length],
    content,
    ...(index % 3 === 0 ? { clientMessageId: `client-${index}` } : {}),
    ...(index % 4 === 2 ? { toolName: 'search', toolCallId: `call-${index}` } : {}),
    ...(index % 7 === 0
      ? { toolCalls: [{ name: 'search', arguments: { q: `😀 ${index}` } }] }
      : {}),
    ...(index % 5 === 0 ? { metadata: { index, tags: ['a', 'é'], nested: { ok: true } } } : {}),
  };
}

/** What appends and reads through GraphQL: a TestApp or the kit's ScribeTesting. */
interface GqlClient {
  gql: TestApp['gql'];
}

/** `count` messages appended to `sessionId`, `batch` at a time, each PERSISTED. */
async function appendAll(
  client: GqlClient,
  sessionId: string,
  count: number,
  make: (index: number) => Record<string, unknown> = (index) => input(index),
  batch = 1000,
  headers: Record<string, string> = ADMIN,
): Promise<void> {
  for (let from = 0; from < count; from += batch) {
    const messages = Array.from({ length: Math.min(batch, count - from) }, (_, i) =>
      make(from + i),
    );
    const answer = await client.gql(APPEND_MANY, { input: { sessionId, messages } }, headers);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.appendMessages.status).toBe('PERSISTED');
  }
}

/** The session and every message of it, as GraphQL reads them. */
async function readAll(client: GqlClient, id: string) {
  const messages: unknown[] = [];
  let after: string | undefined;
  let session: Record<string, unknown> = {};
  for (;;) {
    const answer = await client.gql(READ, { id, after }, ADMIN);
    expect(answer.errors).toBeUndefined();
    const { messages: page, ...fields } = answer.data.session;
    session = fields;
    messages.push(...page.edges.map((edge: { node: unknown }) => edge.node));
    if (!page.pageInfo.hasNextPage) return { session, messages };
    after = page.pageInfo.endCursor;
  }
}

const text = (answer: RawAnswer) => answer.body.toString('utf8');
/** The lines of a JSON Lines answer; of one cut short, the whole lines that arrived. */
const jsonLines = (answer: RawAnswer) =>
  text(answer)
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line));
const listen = async (server: Server) => {
  if (!server.listening)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** `promise`, or a failure naming `what` once `ms` have passed: a deadline, not a wait. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const MESSAGES = 3000;
const outage = () =>
  Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe.each(databaseKinds())('GET /sessions/{id}/export on %s', (database) => {
  let sut: TestApp;
  let port: number;
  let expected: Awaited<ReturnType<typeof readAll>>;

  beforeAll(async () => {
    sut = await createTestApp(database, VARIABLES);
    port = await listen(sut.app.getHttpServer() as Server);
    await appendAll(sut, 'trip', MESSAGES);
    const titled = await sut.gql(
      UPDATE,
      { input: { id: 'trip', title: 'Trip 🗺️ to Zürich', metadata: { owner: 'u1', é: [1, 2] } } },
      ADMIN,
    );
    expect(titled.errors).toBeUndefined();
    await appendAll(sut, 'u1-chat', 3);
    await appendAll(sut, 'u2-chat', 3);
    expected = await readAll(sut, 'trip');
    expect(expected.messages).toHaveLength(MESSAGES);
  });

  afterAll(() => sut.close());

  const exportOf = (id: string, query = '', headers: Record<string, string> = ADMIN) =>
    new RawGet(port, `/sessions/${id}/export${query}`, headers).answer();

  it('exports every stored message as JSON Lines, each field as GraphQL reads it, in order', async () => {
    const answer = await exportOf('trip');
    expect(answer.status).toBe(200);
    expect(answer.complete).toBe(true);
    const [first, ...rest] = jsonLines(answer);
    expect(first).toEqual({ session: expected.session });
    expect(rest).toHaveLength(MESSAGES);
    expect(rest.map((line: { message: unknown }) => line.message)).toEqual(expected.messages);
    expect(
      rest.every((line: { message: { status: string } }) => line.message.status === 'PERSISTED'),
    ).toBe(true);
  });

  it('streams one JSON document with the same session and messages', async () => {
    const answer = await exportOf('trip', '?format=json');
    expect(answer.complete).toBe(true);
    expect(JSON.parse(text(answer))).toEqual(expected);
  });

  it('writes Markdown: the title, then every message under its role and time, in order', async () => {
    const answer = await exportOf('trip', '?format=markdown');
    const markdown = text(answer);
    expect(markdown.startsWith('# Trip 🗺️ to Zürich\n')).toBe(true);
    let from = 0;
    for (const message of expected.messages as {
      role: string;
      createdAt: string;
      content: string;
    }[]) {
      const heading = markdown.indexOf(
        `\n### ${message.role.toLowerCase()} · ${message.createdAt}\n\n`,
        from,
      );
      expect(heading).toBeGreaterThanOrEqual(from);
      const content = markdown.indexOf(`\n${message.content}\n`, heading + 1);
      expect(content).toBeGreaterThan(heading);
      from = content;
    }
  });

  it.each([
    ['', 'application/x-ndjson', 'trip.jsonl'],
    ['?format=jsonl', 'application/x-ndjson', 'trip.jsonl'],
    ['?format=json', 'application/json', 'trip.json'],
    ['?format=markdown', 'text/markdown; charset=utf-8', 'trip.md'],
  ])('answers %p as %s, an attachment named %s, chunked', async (query, type, file) => {
    const answer = await exportOf('trip', query, { ...ADMIN, origin: ORIGIN });
    expect(answer.headers['content-type']).toBe(type);
    expect(answer.headers['content-disposition']).toBe(`attachment; filename="${file}"`);
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
    expect(answer.headers['cache-control']).toBe('no-store');
    // Scribe's HTTP steps stand on the path: its request id, its CORS.
    expect(answer.headers['x-request-id']).toMatch(/\S/);
    expect(answer.headers['access-control-allow-origin']).toBe(ORIGIN);
  });

  it('answers HEAD with the headers alone', async () => {
    const answer = await sut.http().head('/sessions/trip/export?format=markdown').set(ADMIN);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/markdown; charset=utf-8');
  });

  const U = 'UNAUTHENTICATED';
  const F = 'FORBIDDEN';
  it.each<[string, string, number | string, () => Record<string, string>]>([
    ['no token', 'u1-chat', U, () => ({})],
    ['a wrong token', 'u1-chat', U, () => ({ authorization: 'Bearer nope' })],
    ['an expired JWT', 'u1-chat', U, () => ({ authorization: bearer({ scope: 'read' }, -5) })],
    ['a read token', 'u1-chat', 200, () => ({ authorization: 'Bearer ro' })],
    ['an append-only token', 'u1-chat', F, () => ({ authorization: 'Bearer ap' })],
    ['an admin token', 'u2-chat', 200, () => ADMIN],
    ['a JWT with read', 'u2-chat', 200, () => ({ authorization: bearer({ scope: 'read' }) })],
    [
      'a read JWT limited to u1-',
      'u1-chat',
      200,
      () => ({ authorization: bearer({ sub: 'u1', scope: 'read', session_prefix: 'u1-' }) }),
    ],
    [
      'a read JWT limited to u1-',
      'u2-chat',
      F,
      () => ({ authorization: bearer({ sub: 'u1', scope: 'read', session_prefix: 'u1-' }) }),
    ],
    [
      'an append JWT limited to u1-',
      'u1-chat',
      F,
      () => ({ authorization: bearer({ sub: 'u1', scope: 'append', session_prefix: 'u1-' }) }),
    ],
  ])('answers %s on %s with %p', async (_caller, id, outcome, headers) => {
    const answer = await exportOf(id, '', headers());
    if (outcome === 200) {
      expect(answer.status).toBe(200);
      expect(jsonLines(answer)).toHaveLength(4);
      return;
    }
    expect(answer.status).toBe(outcome === U ? 401 : 403);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(text(answer))).toEqual({
      errors: [{ message: expect.any(String), extensions: { code: outcome } }],
    });
  });

  it.each([
    [
      'an unknown format',
      '/sessions/trip/export?format=csv',
      400,
      'BAD_USER_INPUT',
      /^format: must be one of jsonl, markdown, json$/,
    ],
    [
      'two formats',
      '/sessions/trip/export?format=json&format=jsonl',
      400,
      'BAD_USER_INPUT',
      /^format: /,
    ],
    [
      'an id with a space',
      '/sessions/a%20b/export',
      400,
      'BAD_USER_INPUT',
      /^id: must be 1-128 characters/,
    ],
    ['an id too long', `/sessions/${'x'.repeat(129)}/export`, 400, 'BAD_USER_INPUT', /^id: /],
    ['a session never stored', '/sessions/nobody/export', 404, 'NOT_FOUND', /nobody/],
  ])('refuses %s, as JSON without a stack', async (_what, path, status, code, message) => {
    const answer = await new RawGet(port, path, ADMIN).answer();
    expect(answer.status).toBe(status);
    const body = JSON.parse(text(answer));
    expect(body).toEqual({
      errors: [{ message: expect.stringMatching(message), extensions: { code } }],
    });
  });

  it('answers 503 DATABASE_UNAVAILABLE when the database cannot be read before the answer begins', async () => {
    const queries = sut.app.get(SessionQueries);
    for (const method of ['findMetadata', 'pageOfMessages'] as const) {
      const failing = interceptCalls(queries, method, () => Promise.reject(outage()));
      try {
        const answer = await exportOf('trip');
        expect(answer.status).toBe(503);
        const body = JSON.parse(text(answer));
        expect(body.errors[0].extensions).toEqual({ code: 'DATABASE_UNAVAILABLE' });
        expect(body.errors[0].message).not.toMatch(/ECONNREFUSED|10\.0\.0\.1/);
      } finally {
        failing.restore();
      }
    }
  });

  it('cuts the transfer when the database fails mid-stream, and says so at WARN', async () => {
    const logs = new LogWatch();
    const pages = interceptCalls(
      sut.app.get(SessionQueries),
      'pageOfMessages',
      (call, real, ...args) => (call === 3 ? Promise.reject(outage()) : real(...args)),
    );
    try {
      const answer = await exportOf('trip');
      expect(answer.status).toBe(200);
      expect(answer.complete).toBe(false);
      // At most the head and the two pages read before the failure (the cut drops what Node
      // still held of them), each line as it should be.
      const lines = jsonLines(answer);
      expect(lines.length).toBeLessThanOrEqual(1 + 1000);
      expect(lines.slice(1).map((line: { message: unknown }) => line.message)).toEqual(
        expected.messages.slice(0, lines.length - 1),
      );
      expect(await logs.waitFor(/^Export of session "trip" cut after 1000 message/)).toMatch(
        /next page could not be read .*ECONNREFUSED.*truncated transfer/,
      );
      expect(logs.messages('warn')).toHaveLength(1);
    } finally {
      pages.restore();
      logs.restore();
    }
  });

  it('stops reading pages at once when the client goes away mid-stream', async () => {
    const logs = new LogWatch();
    const held = deferred();
    const asked = deferred();
    let dropped: unknown;
    const pages = interceptCalls(
      sut.app.get(SessionQueries),
      'pageOfMessages',
      (call, real, ...args) => {
        const read = () => real(...args);
        if (call !== 2) return read();
        asked.resolve();
        dropped = held.promise.then(read);
        return dropped;
      },
    );
    try {
      const client = new RawGet(port, '/sessions/trip/export', ADMIN);
      await client.arrived('"message"');
      await asked.promise;
      client.socket.destroy();
      // Before the read under way comes back: the export is over, and nothing else is read.
      expect(await logs.waitFor(/^Export of session "trip" ended/)).toBe(
        'Export of session "trip" ended: the client went away after 500 message(s)',
      );
      held.resolve();
      await dropped;
      expect(pages.calls).toHaveLength(2);
    } finally {
      held.resolve();
      pages.restore();
      logs.restore();
    }
  });
});

/** Scribe through the kit, its drain deadline `drainTimeoutMs`, listening on a port. */
async function withDeadline(
  database: DatabaseKind,
  drainTimeoutMs: number,
): Promise<{ testing: ScribeTesting; port: number; close: () => Promise<void> }> {
  const postgres = database === 'postgres' ? await createPostgresSchema() : undefined;
  const options = scribeOptionsFromEnvironment({
    DATA_DIR: '.',
    DB_RETRY_INTERVAL_MS: '0',
    ...VARIABLES,
    ...(postgres ? { DATABASE_URL: postgres.url } : {}),
  });
  const testing = await createScribeTestingModule({
    options: { ...options, dataDir: undefined },
    faults: false,
    override: (builder) =>
      builder.overrideProvider(EXPORT_DRAIN_TIMEOUT_MS).useValue(drainTimeoutMs),
  });
  return {
    testing,
    port: Number(new URL(testing.url).port),
    close: async () => {
      await testing.close();
      await postgres?.drop();
    },
  };
}

describe.each(databaseKinds())('an export’s reader on %s', (database) => {
  const DRAIN_MS = 300;
  // Far more than the kernel's socket buffers hold for a client that reads nothing.
  const LARGE = 320;
  const large = (index: number) => input(index, `${index}:${'x'.repeat(64 * 1024)}`);

  it('cuts a client that stops reading once nothing drained within the deadline', async () => {
    const sut = await withDeadline(database, DRAIN_MS);
    const connections = new AcceptedConnections(sut.testing.app.getHttpServer() as Server);
    const logs = new LogWatch();
    try {
      await appendAll(sut.testing, 'large', LARGE, large, 100);
      const client = new RawGet(sut.port, '/sessions/large/export', ADMIN);
      await client.arrived('HTTP/1.1 200');
      client.socket.pause();
      const server = connections.of(client.socket);
      await within(
        10_000,
        'the server cut the connection',
        new Promise((resolve) => server.once('close', resolve)),
      );
      expect(await logs.waitFor(/^Export of session "large" cut/)).toMatch(
        /the client took nothing for 300 ms after \d+ message/,
      );
      client.socket.resume();
      const answer = await client.answer();
      expect(answer.complete).toBe(false);
      expect(jsonLines(answer).length).toBeLessThan(1 + LARGE);
    } finally {
      logs.restore();
      connections.stop();
      await sut.close();
    }
  });

  it('answers 503 while shutting down, and cuts an export in flight rather than wait on it', async () => {
    const sut = await withDeadline(database, 30_000);
    let closing: Promise<void> | undefined;
    const held = deferred();
    const shutdownHeld = deferred();
    const destroyed = deferred();
    try {
      await appendAll(sut.testing, 'long', 600);
      const app = sut.testing.app;
      const asked = deferred();
      interceptCalls(app.get(SessionQueries), 'pageOfMessages', (call, real, ...args) => {
        const read = () => real(...args);
        if (call !== 2) return read();
        asked.resolve();
        return held.promise.then(read);
      });
      interceptCalls(app.get(ScribeHttpFront), 'onModuleDestroy', (_call, real) => {
        real();
        destroyed.resolve();
      });
      // The server keeps listening while another module's shutdown takes its time.
      interceptCalls(app.get(TranscriptService), 'beforeApplicationShutdown', (_call, real) =>
        shutdownHeld.promise.then(() => real()),
      );
      const inFlight = new RawGet(sut.port, '/sessions/long/export', ADMIN);
      await asked.promise;
      closing = sut.close();
      await destroyed.promise;
      const refused = await new RawGet(sut.port, '/sessions/long/export', ADMIN).answer();
      expect(refused.status).toBe(503);
      expect(JSON.parse(text(refused))).toEqual({
        errors: [
          {
            message: expect.stringMatching(/shutting down/),
            extensions: { code: 'SERVICE_UNAVAILABLE' },
          },
        ],
      });
      shutdownHeld.resolve();
      const cut = await inFlight.answer();
      expect([cut.status, cut.complete]).toEqual([200, false]);
      // Closed, though the page the export waited for never came.
      await within(10_000, 'the app closed', closing);
    } finally {
      shutdownHeld.resolve();
      held.resolve();
      await (closing ?? sut.close());
    }
  });
});

describe('an export from an instance without tokens', () => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp('sqlite', { MAX_REFUSALS_PER_MINUTE: '3', CORS_ORIGINS: ORIGIN });
    await appendAll(sut, 'local', 2, undefined, 1000, {});
  });

  afterAll(() => sut.close());

  it('lets anonymous callers in on loopback, never from another origin, and charges refusals', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await sut.http().get('/sessions/local/export')).status).toBe(200);
    }
    const crossOrigin = await sut.http().get('/sessions/local/export').set('origin', ORIGIN);
    expect(crossOrigin.status).toBe(401);
    expect(crossOrigin.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect((await sut.http().get('/sessions/nobody/export')).status).toBe(404);
    expect((await sut.http().get('/sessions/local/export?format=x')).status).toBe(400);
    // Three refusals: the budget is spent, and the next request is turned away.
    const turned = await sut.http().get('/sessions/local/export');
    expect(turned.status).toBe(429);
    expect(turned.body.errors[0].extensions.code).toBe('RATE_LIMITED');
  });
});

@Controller('sessions')
class HostSessionsController {
  @Get(':id')
  one(@Param('id') id: string): { host: string } {
    return { host: id };
  }

  @Get(':id/summary')
  summary(@Param('id') id: string): { summary: string } {
    return { summary: id };
  }
}

@Module({ controllers: [HostSessionsController] })
class HostRoutes {}

describe("an export in GraphQL 'host' mode", () => {
  let sut: ScribeTesting;

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      graphql: { mode: 'host' },
      imports: [HostRoutes, hostGraphQLModule()],
      options: {
        auth: { apiTokens: 'ops=admin' },
        http: { corsOrigins: [ORIGIN] },
        limits: { maxRefusalsPerMinute: 2 },
      },
    });
    await appendAll(sut, 'hosted', 2);
  });

  afterAll(() => sut?.close());

  it("is still Scribe's route, with Scribe's checks", async () => {
    const port = Number(new URL(sut.url).port);
    const answer = await new RawGet(port, '/sessions/hosted/export', ADMIN).answer();
    expect(answer.status).toBe(200);
    expect(jsonLines(answer)).toHaveLength(3);
    expect(answer.headers['x-request-id']).toMatch(/\S/);
    const anonymous = await new RawGet(port, '/sessions/hosted/export').answer();
    expect(anonymous.status).toBe(401);
  });

  it("leaves the host's own routes beside it alone", async () => {
    const port = Number(new URL(sut.url).port);
    for (let i = 0; i < 4; i++) {
      expect((await new RawGet(port, `/sessions/hosted/nothing-${i}`).answer()).status).toBe(404);
    }
    for (const path of ['/sessions/hosted', '/sessions/hosted/summary']) {
      const answer = await new RawGet(port, path, { origin: ORIGIN }).answer();
      expect(answer.status).toBe(200);
      expect(answer.headers['x-request-id']).toBeUndefined();
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    }
    // The host's 404s spent none of Scribe's budget (two refusals a minute).
    expect((await new RawGet(port, '/sessions/hosted/export', ADMIN).answer()).status).toBe(200);
  });
});
