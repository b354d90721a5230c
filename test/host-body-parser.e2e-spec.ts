import { type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import express from 'express';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ScribeModule } from '../src/scribe.module.js';

// A host that mounts its own express.json() on the Express instance it hands to Nest: its
// parser reads Scribe's GraphQL bodies first, and Scribe's (with its MAX_BODY_DEPTH check on
// the bytes) skips them as read. Found by the stranger's attack on MutationWorstCase: once it
// had learned an operation, variables nested deeper than JSON.stringify recurses threw out of
// the response budget's plugin, an HTTP 500 naming "Maximum call stack size exceeded".
describe("a host's own JSON body parser ahead of Scribe's", () => {
  let app: INestApplication;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-parser-'));
    const host = express();
    host.use(express.json({ limit: '1mb' }));
    const moduleRef = await Test.createTestingModule({
      imports: [ScribeModule.forRoot({ dataDir })],
    }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(host), { logger: ['fatal'] });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const UPDATE = 'mutation($i: UpdateSessionInput!) { updateSession(input: $i) { id } }';
  const post = (body: string) =>
    request(app.getHttpServer())
      .post('/graphql')
      .set('content-type', 'application/json')
      .send(body);

  it('answers variables nested 20,000 deep with BAD_USER_INPUT, never a 500', async () => {
    // The first request of the operation is costed exactly, and its shape kept.
    const first = await post(JSON.stringify({ query: UPDATE, variables: { i: { id: 'x' } } }));
    expect(first.status).toBe(200);
    const depth = 20_000;
    const deep = `{"query":${JSON.stringify(UPDATE)},"variables":{"i":{"id":"x","metadata":${'['.repeat(depth)}${']'.repeat(depth)}}}}`;
    for (let i = 0; i < 2; i++) {
      const answer = await post(deep);
      expect(answer.status).toBe(200);
      const body = answer.body as {
        data: unknown;
        errors: { message: string; extensions: object }[];
      };
      expect(body.data).toBeNull();
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0].extensions).toEqual({
        code: 'BAD_USER_INPUT',
        field: 'input.metadata',
      });
      expect(body.errors[0].message).toContain('nested more than');
      expect(JSON.stringify(body)).not.toMatch(/call stack|RangeError|\.js:\d/);
    }
  });
});
