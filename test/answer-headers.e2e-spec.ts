import { ScribeErrorCode } from '../src/common/errors/scribe-error-code.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// What every GraphQL answer of Scribe's own app says about caching: no-store (noStorePlugin,
// with Apollo's cache-control plugin off) and no ETag (Express's hash of each body, off).
describe.each(databaseKinds())('GraphQL answer headers on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database);
  });

  afterAll(() => sut.close());

  const post = (query: string) =>
    sut.http().post('/graphql').set('content-type', 'application/json').send({ query });

  it('answers a query with cache-control: no-store and no ETag', async () => {
    const answer = await post('{ __typename }');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { __typename: 'Query' } });
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers.etag).toBeUndefined();
  });

  it('answers a mutation and a refused document the same way', async () => {
    const appended = await post(
      'mutation { appendMessage(input: { sessionId: "h", role: USER, content: "hi" }) { status } }',
    );
    expect(appended.body.data.appendMessage.status).toBe('PERSISTED');
    expect(appended.headers['cache-control']).toBe('no-store');
    expect(appended.headers.etag).toBeUndefined();

    const refused = await post('{ nope }');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions.code).toBe(ScribeErrorCode.BadUserInput);
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.headers.etag).toBeUndefined();
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
});
