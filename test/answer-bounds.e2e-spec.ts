import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// The amplification of issue 18 at a small scale: sessions with large metadata, read many
// times over in one request (aliases of a root field, a long list), must be refused before
// the answer is built, with QUERY_TOO_COMPLEX and the bound, never answered or a 500.
const MAX_RESPONSE_BYTES = 256 * 1024;
const SESSIONS = 20;
const METADATA = { blob: 'x'.repeat(30_000) };
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const UPDATE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { revision } }`;
const LIST = `query($after: String) { sessions(first: 1000, after: $after) {
  pageInfo { hasNextPage endCursor } edges { node { id metadata } } } }`;

const aliased = (count: number, field: string) =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${field}`).join(' ')} }`;

describe.each(databaseKinds())('answers bounded in bytes on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, {
      MAX_PAGE_BYTES: String(64 * 1024),
      MAX_MESSAGE_BYTES: '40000',
      MAX_BODY_BYTES: '110000',
      MAX_RESPONSE_BYTES: String(MAX_RESPONSE_BYTES),
      SESSION_CACHE_MAX_BYTES: String(1024 * 1024),
    });
    for (let i = 0; i < SESSIONS; i++) {
      const sessionId = `s${i}`;
      await sut.gql(APPEND, { input: { sessionId, role: 'USER', content: 'hi' } });
      const updated = await sut.gql(UPDATE, { input: { id: sessionId, metadata: METADATA } });
      expect(updated.errors).toBeUndefined();
    }
  });

  afterAll(() => sut.close());

  const expectRefused = (answer: Awaited<ReturnType<TestApp['gql']>>) => {
    expect(answer.status).toBe(400);
    expect(answer.data ?? null).toBeNull();
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(answer.errors?.[0]?.message).toContain(`${MAX_RESPONSE_BYTES} bytes`);
    expect(answer.errors?.[0]?.message).toContain('MAX_RESPONSE_BYTES');
  };

  it('refuses the session list aliased ten times (20 × 30 KB of metadata each)', async () => {
    const answer = await sut.gql(
      aliased(10, 'sessions(first: 1000) { edges { node { metadata } } }'),
    );
    expectRefused(answer);
    expect((await sut.gql('{ __typename }')).data).toEqual({ __typename: 'Query' });
  });

  it('refuses one session read under aliases past the bound, and answers fewer', async () => {
    expectRefused(await sut.gql(aliased(10, 'session(id: "s0") { metadata }')));
    const fewer = await sut.gql(aliased(3, 'session(id: "s0") { metadata }'));
    expect(fewer.errors).toBeUndefined();
    expect(fewer.data.a2.metadata).toEqual(METADATA);
  });

  it('refuses aliased mutations whose answers pass the bound before changing anything', async () => {
    const before = await sut.gql('{ session(id: "s1") { revision } }');
    const mutation = `mutation { ${Array.from({ length: 10 }, (_, i) => `u${i}: updateSession(input: { id: "s1", title: "t${i}" }) { metadata }`).join(' ')} }`;
    expectRefused(await sut.gql(mutation));
    const after = await sut.gql('{ session(id: "s1") { revision title } }');
    expect(after.data.session).toEqual({ revision: before.data.session.revision, title: null });
  });

  it('pages the session list by bytes, every session once', async () => {
    const first = await sut.gql(LIST);
    expect(first.errors).toBeUndefined();
    const page = first.data.sessions;
    expect(page.edges.length).toBeLessThan(SESSIONS);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const seen: string[] = page.edges.map((edge: { node: { id: string } }) => edge.node.id);
    let after: string | null = page.pageInfo.endCursor;
    while (after) {
      const next = await sut.gql(LIST, { after });
      expect(next.errors).toBeUndefined();
      seen.push(...next.data.sessions.edges.map((edge: { node: { id: string } }) => edge.node.id));
      after = next.data.sessions.pageInfo.hasNextPage
        ? next.data.sessions.pageInfo.endCursor
        : null;
    }
    expect([...seen].sort()).toEqual(Array.from({ length: SESSIONS }, (_, i) => `s${i}`).sort());
  });

  it('bounds pages of messages under aliases, cached (small) or read from the database (large)', async () => {
    const content = 'm'.repeat(30_000);
    for (let i = 0; i < 6; i++) {
      await sut.gql(APPEND, { input: { sessionId: 'small', role: 'USER', content } });
    }
    // 40 × 30,000 characters: past SESSION_CACHE_MAX_BYTES (1 MiB), so read page by page.
    for (let i = 0; i < 40; i++) {
      await sut.gql(APPEND, { input: { sessionId: 'large', role: 'USER', content } });
    }
    for (const id of ['small', 'large']) {
      // A page holds two of these (about 120 KB as estimated): two fit the bound, three do not.
      const read = `session(id: "${id}") { messages(first: 1000) { edges { node { content } } } }`;
      const two = await sut.gql(aliased(2, read));
      expect(two.errors).toBeUndefined();
      expect(two.data.a1.messages.edges).toHaveLength(2);
      expectRefused(await sut.gql(aliased(3, read)));
    }
  });

  it("gives every answer a request id: the caller's when plain, else a new one", async () => {
    const given = await sut
      .http()
      .post('/graphql')
      .set('x-request-id', 'trace-42')
      .send({ query: '{ __typename }' });
    expect(given.headers['x-request-id']).toBe('trace-42');
    const forged = await sut
      .http()
      .post('/graphql')
      .set('x-request-id', 'a b"forged=1')
      .send({ query: '{ __typename }' });
    expect(forged.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const overlong = await sut
      .http()
      .post('/graphql')
      .set('x-request-id', 'x'.repeat(65))
      .send({ query: '{ __typename }' });
    expect(overlong.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
  it('refuses a batch sent as variables past the bound on every request, and admits less', async () => {
    // Two messages of 38 KB, appended under three or four aliases: 229 KB or 305 KB of
    // arguments that the answer could echo, against 256 KB.
    const input = {
      sessionId: 'bulk',
      messages: [0, 1].map((i) => ({ role: 'USER', content: String(i).padEnd(38_000, 'y') })),
    };
    const batch = (count: number) =>
      `mutation($in: AppendMessagesInput!) { ${Array.from({ length: count }, (_, i) => `a${i}: appendMessages(input: $in) { status }`).join(' ')} }`;
    // The first request of an operation is costed exactly and its shape kept; the later ones
    // are judged on a bound (MutationWorstCase), and must be refused alike, naming one cost.
    const refusals = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const answer = await sut.gql(batch(4), { in: input });
      expectRefused(answer);
      refusals.add(answer.errors?.[0]?.message ?? '');
    }
    expect(refusals.size).toBe(1);
    for (let i = 0; i < 2; i++) {
      const answer = await sut.gql(batch(3), { in: input });
      expect(answer.errors).toBeUndefined();
      expect(answer.data.a2.status).toBe('PERSISTED');
    }
    const stored = await sut.gql('{ session(id: "bulk") { messageCount } }');
    expect(stored.data.session.messageCount).toBe(12);
  });
});
