import { getIntrospectionQuery } from 'graphql';
import { createTestApp, type TestApp } from './support/test-app.js';

// GraphQL tools (GraphiQL, codegen, Postman) read the schema through the standard
// introspection query: answered with GRAPHQL_INTROSPECTION=true (or in development), refused
// otherwise, and never refused for its depth.
describe('introspection', () => {
  let apps: TestApp[] = [];

  afterEach(async () => {
    await Promise.all(apps.map((app) => app.close()));
    apps = [];
  });

  async function app(settings: Record<string, string>): Promise<TestApp> {
    const started = await createTestApp('sqlite', settings);
    apps.push(started);
    return started;
  }

  it('answers the standard introspection query with GRAPHQL_INTROSPECTION=true', async () => {
    const sut = await app({ GRAPHQL_INTROSPECTION: 'true' });

    const answer = await sut.gql(getIntrospectionQuery());

    expect(answer.errors).toBeUndefined();
    const types = (answer.data.__schema.types as { name: string }[]).map((type) => type.name);
    expect(types).toEqual(expect.arrayContaining(['Session', 'Message', 'PageInfo']));
  });

  it('refuses it in production by default with a clear error, while __typename still answers', async () => {
    const sut = await app({});

    const answer = await sut.gql(getIntrospectionQuery());

    expect(answer.data ?? null).toBeNull();
    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(answer.errors?.[0]?.message).toMatch(/introspection is not allowed/i);
    expect(JSON.stringify(answer.body)).not.toMatch(/stacktrace| {4}at /);
    expect((await sut.gql('{ __typename }')).data.__typename).toBe('Query');
  });
});
