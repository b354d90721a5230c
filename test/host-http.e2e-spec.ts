import { Body, Controller, Get, Module, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

@Module({ controllers: [HostController] })
class HostModule {}

const ORIGIN = 'https://app.example';
const MESSAGE = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;

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
    const options = scribeOptionsFromEnvironment({
      DATA_DIR: dataDir,
      DB_RETRY_INTERVAL_MS: '0',
      MAX_REFUSALS_PER_MINUTE: '3',
      CORS_ORIGINS: ORIGIN,
      API_TOKENS: 'good=read+append',
    });
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScribeModule.forRoot({ ...options, http: { ...options.http, guardAllPaths: false } }),
        HostModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: ['fatal'], ...options });
    await app.init();
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
