import { createTestApp, type TestApp } from './support/test-app.js';

// Found by the stranger's attack on issue 18: a subscription operation sent over HTTP POST runs
// the subscription field's `resolve` (the scope guard guards only `subscribe`), with no event:
// an append-only token gets past the read scope, the resolver throws a TypeError, the client
// gets INTERNAL_SERVER_ERROR, and an ERROR line with a stack is logged each time, unlimited and
// never charged to the refusal budget. Expected: refused as a client error, like a query over
// the WebSocket is (BAD_REQUEST), and charged.
describe('a subscription sent over HTTP', () => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp('sqlite', {
      API_TOKENS: 'ap=append,rd=read',
      MAX_REFUSALS_PER_MINUTE: '5',
    });
  });

  afterAll(() => sut.close());

  it.each([
    ['sessionUpdated', 'subscription { sessionUpdated(id: "victim") { id } }'],
    ['messageAppended', 'subscription { messageAppended(sessionId: "victim") { cursor } }'],
  ])('%s is refused as the client’s error, not a fault of the server', async (_name, query) => {
    for (const token of ['ap', 'rd']) {
      const response = await sut.gql(query, undefined, { authorization: `Bearer ${token}` });
      const codes = response.errors?.map((error) => error.extensions?.code);
      expect(codes).not.toContain('INTERNAL_SERVER_ERROR');
      expect(codes?.length).toBeGreaterThan(0);
    }
  });

  it('spends the refusal budget', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const response = await sut.gql(
        `subscription { sessionUpdated(id: "v${i}") { id } }`,
        undefined,
        { authorization: 'Bearer ap' },
      );
      statuses.push(response.status);
    }
    expect(statuses).toContain(429);
  });
});
