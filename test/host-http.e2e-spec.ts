import {
  Body,
  Controller,
  Get,
  Module,
  Post,
  VersioningType,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExpressAdapter } from '@nestjs/platform-express';
import request from 'supertest';
import { scribeOptionsFromEnvironment } from '../src/config/scribe-options-from-environment.js';
import { ScribeModule } from '../src/scribe.module.js';

@Controller()
class HostController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
  }

  @Post('echo')
  echo(@Body() body: unknown): unknown {
    return body;
  }
}

// A host's own routes under Scribe's GraphQL path and beside it: the host's, not Scribe's.
@Controller()
class HostAdminController {
  @Get(['graphql/admin', 'graphql-x'])
  admin(): { admin: string } {
    return { admin: 'host' };
  }

  @Post(['graphql/admin', 'graphql-x'])
  adminEcho(@Body() body: unknown): { echo: unknown } {
    return { echo: body ?? null };
  }

  // GET only: a POST here reaches Apollo, mounted on the subtree, and so meets Scribe's steps.
  @Get('graphql/report')
  report(): { report: string } {
    return { report: 'host' };
  }
}

@Module({ controllers: [HostController, HostAdminController] })
class HostModule {}

const ORIGIN = 'https://app.example';
const MESSAGE = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;

/** A host's app with Scribe and HostModule, `refusals` refused requests a minute allowed. */
async function hostApp(
  dataDir: string,
  appOptions: { bodyParser?: boolean },
  refusals: number,
  setup: (app: INestApplication) => void = () => undefined,
  environment: Record<string, string> = {},
): Promise<INestApplication> {
  const options = scribeOptionsFromEnvironment({
    DATA_DIR: dataDir,
    DB_RETRY_INTERVAL_MS: '0',
    MAX_REFUSALS_PER_MINUTE: String(refusals),
    CORS_ORIGINS: ORIGIN,
    API_TOKENS: 'good=read+append',
    ...environment,
  });
  const moduleRef = await Test.createTestingModule({
    imports: [
      ScribeModule.forRoot({ ...options, http: { ...options.http, guardAllPaths: false } }),
      HostModule,
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['fatal'], ...appOptions });
  setup(app);
  await app.init();
  return app;
}

// A host's app imports Scribe and keeps Nest's defaults (its body parser on): Scribe's steps
// stand on Scribe's paths only, ahead of Nest's parser there, and nowhere else.
describe.each([
  ['default body parser', {}],
  ['bodyParser: false', { bodyParser: false }],
])('a host app (%s)', (_name, options) => {
  let app: INestApplication;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    // A host serves its own routes too: the gate stands on Scribe's paths only (3 refusals a
    // minute: the host's 404s below would trip it, Scribe's three refusals do not).
    app = await hostApp(dataDir, options, 3);
  });

  afterAll(async () => {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const server = () => app.getHttpServer();
  const graphql = () =>
    request(server())
      .post('/graphql')
      .set({ authorization: 'Bearer good', 'content-type': 'application/json' });

  it.each(['/graphql/admin', '/graphql-x'])(
    "leaves the host's %s alone: no Scribe token, parser, CORS or refusal",
    async (path) => {
      const get = await request(server()).get(path).set('origin', ORIGIN);
      expect(get.status).toBe(200);
      expect(get.body).toEqual({ admin: 'host' });
      expect(get.headers['access-control-allow-origin']).toBeUndefined();
      // A `query` past MAX_QUERY_BYTES (64 KiB) is no business of Scribe's on a host's route.
      const body = { a: 1, query: 'x'.repeat(70 * 1024) };
      const post = await request(server()).post(path).send(body);
      expect(post.status).toBe(201);
      expect(post.body).toEqual({ echo: 'bodyParser' in options ? null : body });
      if (!('bodyParser' in options)) {
        // Nest's parser and its 100 kB default: not Scribe's MAX_BODY_BYTES nor its codes.
        const big = await request(server())
          .post(path)
          .send({ pad: 'x'.repeat(200 * 1024) });
        expect(big.status).toBe(413);
        expect(big.body.errors).toBeUndefined();
      }
    },
  );

  it("spends none of Scribe's refusal budget on the host's 404s under /health and /metrics", async () => {
    for (let i = 0; i < 64; i++) {
      const path = i % 2 === 0 ? `/health/x${i}` : `/metrics/x/${i}`;
      expect((await request(server()).get(path)).status).toBe(404);
    }
    expect((await request(server()).get('/health')).status).not.toBe(429);
    expect((await request(server()).get('/metrics')).status).toBe(200);
    const answer = await graphql().send({ query: '{ __typename }' });
    expect(answer.status).toBe(200);
    expect(answer.body.errors).toBeUndefined();
  });

  it("leaves the host's routes alone: no Scribe refusal, no Scribe CORS", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await request(server()).get('/nothing-here')).status).toBe(404);
    }
    const hello = await request(server()).get('/hello').set('origin', ORIGIN);
    expect(hello.status).toBe(200);
    expect(hello.body).toEqual({ hello: 'world' });
    expect(hello.headers['access-control-allow-origin']).toBeUndefined();
  });

  it("accepts a 1 MB message on /graphql, past Nest's 100 kB default", async () => {
    const input = { sessionId: 'host', role: 'USER', content: 'x'.repeat(1024 * 1024) };
    const answer = await graphql().send({ query: MESSAGE, variables: { input } });
    expect(answer.status).toBe(200);
    expect(answer.body.errors).toBeUndefined();
  });

  it("refuses an oversize, malformed or non-UTF-8 body on /graphql with Scribe's codes", async () => {
    const big = await graphql().send({
      query: '{ __typename }',
      pad: 'x'.repeat(17 * 1024 * 1024),
    });
    expect(big.status).toBe(413);
    expect(big.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    const malformed = await graphql().send('{"query": ');
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].extensions.code).toBe('BAD_REQUEST');
    const latin = await graphql()
      .set('content-type', 'application/json; charset=iso-8859-1')
      .send('{"query":"{ __typename }"}');
    expect(latin.status).toBe(415);
    expect(latin.body.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  if (!('bodyParser' in options)) {
    it("gives the host's POST route Nest's own parser and its own errors", async () => {
      const echo = await request(server()).post('/echo').send({ a: 1 });
      expect(echo.status).toBe(201);
      expect(echo.body).toEqual({ a: 1 });
      const big = await request(server())
        .post('/echo')
        .send({ pad: 'x'.repeat(200 * 1024) });
      expect(big.status).toBe(413);
      expect(big.body.errors).toBeUndefined();
    });
  }
});

// Every request that can reach Apollo meets Scribe's steps: the path in another case (Express
// routes ignore case by default) and with a trailing slash. Apollo is mounted with app.use(path),
// which would answer any path under it too: there, it answers none, with no Scribe step.
describe.each([
  ['default body parser', {}],
  ['bodyParser: false', { bodyParser: false }],
])("Scribe's checks on what reaches its endpoint (%s)", (_name, options) => {
  let app: INestApplication;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    app = await hostApp(dataDir, options, 1000);
  });

  afterAll(async () => {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const post = (path: string) =>
    request(app.getHttpServer())
      .post(path)
      .set({ authorization: 'Bearer good', 'content-type': 'application/json' });

  it.each(['/GraphQL', '/graphql/', '/GRAPHQL/'])(
    "reads %s's body with Scribe's parser and refuses it with Scribe's codes",
    async (path) => {
      // Past Nest's 100 kB default: Scribe's parser read it.
      const big = await post(path).send({ query: '{ __typename }', pad: 'x'.repeat(200 * 1024) });
      expect(big.status).toBe(200);
      expect(big.body.data).toEqual({ __typename: 'Query' });
      const huge = await post(path).send({ query: '{ __typename }', pad: 'x'.repeat(17 << 20) });
      expect(huge.status).toBe(413);
      expect(huge.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      const malformed = await post(path).send('{"query": ');
      expect(malformed.status).toBe(400);
      expect(malformed.body.errors[0].extensions.code).toBe('BAD_REQUEST');
      const anonymous = await request(app.getHttpServer())
        .post(path)
        .send({ query: '{ __typename }' });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    },
  );

  // Found by the stranger (issue 02): a form body was skipped by Scribe's JSON parser, read by
  // Nest's urlencoded one (qs), and run by Apollo (a custom header passes its CSRF check).
  it.each([
    ['application/x-www-form-urlencoded', (query: string) => `query=${encodeURIComponent(query)}`],
    ['text/plain', (query: string) => JSON.stringify({ query })],
    ['multipart/form-data; boundary=x', (query: string) => `--x\r\n${query}\r\n--x--\r\n`],
    ['application/graphql', (query: string) => query],
  ])('refuses a %s body on /graphql, 415, unread and unrun', async (type, encode) => {
    const query =
      'mutation { appendMessage(input: { sessionId: "form", role: USER, content: "x" }) { status } }';
    const answer = await post('/graphql')
      .set({ 'content-type': type, 'apollo-require-preflight': '1' })
      .send(encode(query));
    expect(answer.status).toBe(415);
    expect(answer.headers.connection).toBe('close');
    expect(answer.body).toEqual({
      errors: [
        {
          message: 'GraphQL request bodies must be JSON (Content-Type: application/json)',
          extensions: { code: 'UNSUPPORTED_MEDIA_TYPE' },
        },
      ],
    });
    const read = await post('/graphql').send({
      query: '{ session(id: "form") { messages(first: 1) { totalCount } } }',
    });
    expect(read.body.data).toEqual({ session: null });
  });

  it('still takes JSON with parameters, and a GET or an empty POST with no type', async () => {
    const json = await post('/graphql')
      .set('content-type', 'Application/JSON; charset=UTF-8')
      .send(JSON.stringify({ query: '{ __typename }' }));
    expect(json.status).toBe(200);
    const get = await request(app.getHttpServer())
      .get(`/graphql?query=${encodeURIComponent('{ __typename }')}`)
      .set({ authorization: 'Bearer good', 'apollo-require-preflight': '1' });
    expect(get.status).toBe(200);
    expect(get.body.data).toEqual({ __typename: 'Query' });
    const empty = await request(app.getHttpServer())
      .post('/graphql')
      .set({ authorization: 'Bearer good', 'apollo-require-preflight': '1' });
    // Apollo's own answer to a POST with no body: nothing for Scribe to refuse by its type.
    expect(empty.status).toBe(400);
    expect(empty.body.errors?.[0].extensions?.code).not.toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  // /graphql/report is the host's for GET only: a POST there is no route's, nor Apollo's.
  it.each(['/graphql/nothing', '/GraphQL/x/y', '/graphql/report'])(
    "answers no GraphQL on %s, which no host route takes: the app's 404",
    async (path) => {
      const answer = await post(path).send({ query: '{ __typename }' });
      expect(answer.status).toBe(404);
      expect(answer.body.data).toBeUndefined();
      expect(answer.body.errors).toBeUndefined();
      const get = await request(app.getHttpServer())
        .get(`${path}?query=${encodeURIComponent('{ __typename }')}`)
        .set('authorization', 'Bearer good');
      // GET /graphql/report is the host's own route.
      expect(get.body).toEqual(path === '/graphql/report' ? { report: 'host' } : expect.anything());
      expect(get.status).toBe(path === '/graphql/report' ? 200 : 404);
      expect(get.body.data).toBeUndefined();
    },
  );
});

// Found by the stranger (issue 06a): under a host's global prefix Nest serves Scribe's /health
// and /metrics at /api/health and /api/metrics, where Scribe's steps did not stand (CORS, the
// refusal budget, its error handler). They stand where Nest serves them, the prefix's
// exclusions followed.
describe.each([
  [
    'a global prefix',
    (app: INestApplication) => app.setGlobalPrefix('api'),
    '/api/health',
    '/api/metrics',
    '/api/health',
  ],
  [
    'a global prefix that excludes /health',
    (app: INestApplication) => app.setGlobalPrefix('api', { exclude: ['health'] }),
    '/health',
    '/api/metrics',
    // The exclusion takes /health alone: Nest serves its probes under the prefix.
    '/api/health',
  ],
])("Scribe's routes under %s", (_name, setup, health, metrics, probes) => {
  let app: INestApplication;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    app = await hostApp(dataDir, {}, 2, setup, { MAX_QUERY_BYTES: '1024' });
  });

  afterAll(async () => {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['health', health],
    ['health/live', `${probes}/live`],
    ['health/ready', `${probes}/ready`],
    ['metrics', metrics],
  ])("serves %s at %s with Scribe's CORS", async (_route, path) => {
    const answer = await request(app.getHttpServer()).get(path).set('origin', ORIGIN);
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe(ORIGIN);
  });

  it("keeps Scribe's GraphQL endpoint and its steps on /graphql", async () => {
    const anonymous = await request(app.getHttpServer())
      .post('/graphql')
      .send({ query: '{ __typename }' });
    expect(anonymous.status).toBe(401);
    const long = await request(app.getHttpServer())
      .get(`/graphql?query=${encodeURIComponent(`{ __typename ${' '.repeat(2000)}}`)}`)
      .set({ authorization: 'Bearer good', 'apollo-require-preflight': '1' });
    // MAX_QUERY_BYTES, checked on a GET's query once Nest's middleware no longer checked it.
    expect(long.status).toBe(413);
    expect(long.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

// Found by the stranger (issue 20): a global prefix or URI version that puts /health or
// /metrics on graphql.path left the API unreachable there (POST 404, GET the health answer).
describe.each([
  ['a global prefix', '/api/health', (app: INestApplication) => app.setGlobalPrefix('api')],
  ['a global prefix', '/api/metrics', (app: INestApplication) => app.setGlobalPrefix('api')],
  [
    'URI versioning',
    '/v1/health',
    (app: INestApplication) =>
      app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' }),
  ],
])('graphql.path under %s on %s', (_name, path, setup) => {
  it('refuses the start, naming the path and the route', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    const options = scribeOptionsFromEnvironment({ DATA_DIR: dataDir, GRAPHQL_PATH: path });
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScribeModule.forRoot({ ...options, http: { ...options.http, guardAllPaths: false } }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    setup(app);
    try {
      await expect(app.init()).rejects.toThrow(
        new RegExp(`^graphql\\.path ${path} is where this app serves Scribe's /(health|metrics) `),
      );
    } finally {
      await app.close().catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

/** An adapter that says it is not Express, as a Fastify host's does. */
class NotExpressAdapter extends ExpressAdapter {
  override getType(): string {
    return 'fastify';
  }
}

describe('a host whose HTTP adapter is not Express', () => {
  it('has its start refused by app.init(), with one line, and lives on', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    const moduleRef = await Test.createTestingModule({
      imports: [ScribeModule.forRoot({ dataDir })],
    }).compile();
    const app = moduleRef.createNestApplication(new NotExpressAdapter(), { logger: false });
    try {
      await expect(app.init()).rejects.toThrow(/^Scribe serves HTTP on Express only, not fastify$/);
    } finally {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
