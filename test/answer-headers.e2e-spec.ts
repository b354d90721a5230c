import request from 'supertest';
import { ScribeErrorCode } from '../src/common/errors/scribe-error-code.js';
import { databaseKinds } from './support/databases.js';
import { faultSuite } from './support/fault-helpers.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// What the answers Apollo sends from Scribe's own endpoint say about caching: no-store, as with
// Apollo's cache-control plugin, now off (noStorePlugin), and a persisted query's miss its own.
describe.each(databaseKinds())('GraphQL answer headers on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database);
  });

  afterAll(() => sut.close());

  const post = (query: string) =>
    sut.http().post('/graphql').set('content-type', 'application/json').send({ query });

  it('answers a query with cache-control: no-store', async () => {
    const answer = await post('{ __typename }');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { __typename: 'Query' } });
    expect(answer.headers['cache-control']).toBe('no-store');
  });

  it('answers a mutation and a refused document the same way', async () => {
    const appended = await post(
      'mutation { appendMessage(input: { sessionId: "h", role: USER, content: "hi" }) { status } }',
    );
    expect(appended.body.data.appendMessage.status).toBe('PERSISTED');
    expect(appended.headers['cache-control']).toBe('no-store');

    const refused = await post('{ nope }');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions.code).toBe(ScribeErrorCode.BadUserInput);
    expect(refused.headers['cache-control']).toBe('no-store');
  });

  it('answers a GET query with no-store as well', async () => {
    const answer = await sut
      .http()
      .get('/graphql')
      .query({ query: '{ __typename }' })
      .set('apollo-require-preflight', 'true');
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
  });

  it("answers a persisted query's miss with Apollo's own header", async () => {
    const answer = await sut
      .http()
      .post('/graphql')
      .set('content-type', 'application/json')
      .send({ extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } });
    expect(answer.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(answer.headers['cache-control']).toBe('private, no-cache, must-revalidate');
  });
});

describe("the answers of Scribe's own server (dist/main.js)", () => {
  const { faultTest, server, dataDirectory } = faultSuite(60_000);

  faultTest(
    'carry no ETag: a no-store answer is never revalidated, so its body is not hashed',
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), API_TOKENS: 'rw=read+append' });
      const answers = [
        await request(sut.url)
          .post('/graphql')
          .set({ 'content-type': 'application/json', authorization: 'Bearer rw' })
          .send({ query: '{ sessions(first: 1) { totalCount } }' }),
        await sut.get('/health/live'),
        await sut.get('/admin'),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.headers.etag).toBeUndefined();
      }
      // The admin console's files are cached for an hour, then revalidated by their date.
      const asset = await sut.get('/admin/assets/admin-console.js');
      expect(asset.status).toBe(200);
      expect(asset.headers.etag).toBeUndefined();
      const revalidated = await request(sut.url)
        .get('/admin/assets/admin-console.js')
        .set('if-modified-since', asset.headers['last-modified']);
      expect(revalidated.status).toBe(304);
    },
  );
});
