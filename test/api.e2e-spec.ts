import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

const APPEND = `mutation Append($input: AppendMessageInput!) {
  appendMessage(input: $input) {
    status
    message { id sessionId role content clientMessageId toolName toolCallId toolCalls metadata createdAt }
  }
}`;

const APPEND_MANY = `mutation AppendMany($input: AppendMessagesInput!) {
  appendMessages(input: $input) { status messages { id content clientMessageId } }
}`;

const READ = `query Read($id: ID!, $first: Int, $after: String) {
  session(id: $id) {
    id title messageCount revision createdAt updatedAt
    messages(first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { cursor node { id content role } }
    }
  }
}`;

describe.each(databaseKinds())('GraphQL API on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, {
      MAX_MESSAGE_BYTES: '1024',
      MAX_BODY_BYTES: '70000',
      GRAPHQL_INTROSPECTION: 'true',
    });
  });

  afterAll(async () => {
    await sut.close();
  });

  async function append(sessionId: string, content: string, extra: Record<string, unknown> = {}) {
    const response = await sut.gql(APPEND, {
      input: { sessionId, role: 'USER', content, ...extra },
    });
    expect(response.errors).toBeUndefined();
    return response.data.appendMessage;
  }

  async function contents(sessionId: string): Promise<string[]> {
    const response = await sut.gql(READ, { id: sessionId, first: 1000 });
    return response.data.session.messages.edges.map((edge: any) => edge.node.content);
  }

  it('creates an unknown session on its first append and reads it back', async () => {
    const before = await sut.gql(READ, { id: 'fresh-session' });
    expect(before.data.session).toBeNull();

    const payload = await append('fresh-session', 'hello', {
      toolCalls: [{ name: 'search', arguments: { q: 'x' } }],
      metadata: { locale: 'en' },
      toolName: 'search',
      toolCallId: 'call-1',
    });
    expect(payload.status).toBe('PERSISTED');
    expect(payload.message).toMatchObject({
      sessionId: 'fresh-session',
      role: 'USER',
      content: 'hello',
      toolCalls: [{ name: 'search', arguments: { q: 'x' } }],
      metadata: { locale: 'en' },
      toolName: 'search',
      toolCallId: 'call-1',
    });
    expect(payload.message.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isNaN(Date.parse(payload.message.createdAt))).toBe(false);

    const after = await sut.gql(READ, { id: 'fresh-session' });
    expect(after.data.session).toMatchObject({ id: 'fresh-session', messageCount: 1, revision: 1 });
    expect(after.data.session.messages.edges[0].node).toEqual({
      id: payload.message.id,
      content: 'hello',
      role: 'USER',
    });
  });

  it('reads a transcript back in the order its appends were accepted', async () => {
    for (let i = 0; i < 12; i++) await append('ordered', `m${i}`);
    expect(await contents('ordered')).toEqual(Array.from({ length: 12 }, (_, i) => `m${i}`));
  });

  it('stores concurrent appends to one session in the order they were accepted', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => append('concurrent', `c${i}`)),
    );
    const read = await sut.gql(
      `query($id: ID!) { session(id: $id) { revision messages { edges { node { id createdAt } } } } }`,
      { id: 'concurrent' },
    );
    const stored = read.data.session.messages.edges.map((edge: any) => edge.node);
    expect(new Set(stored.map((node: any) => node.id))).toEqual(
      new Set(results.map((result) => result.message.id)),
    );
    const acceptedTimes = stored.map((node: any) => Date.parse(node.createdAt));
    expect(acceptedTimes).toEqual([...acceptedTimes].sort((a, b) => a - b));
    expect(read.data.session.revision).toBe(20);
  });

  it('pages through a transcript with cursors', async () => {
    await sut.gql(APPEND_MANY, {
      input: {
        sessionId: 'paged',
        messages: Array.from({ length: 25 }, (_, i) => ({ role: 'ASSISTANT', content: `p${i}` })),
      },
    });
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const response: any = await sut.gql(READ, { id: 'paged', first: 10, after });
      const connection = response.data.session.messages;
      expect(connection.totalCount).toBe(25);
      seen.push(...connection.edges.map((edge: any) => edge.node.content));
      pages += 1;
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `p${i}`));
  });

  it('ends a page early at MAX_PAGE_BYTES, from the database as from the cache, and goes on from there', async () => {
    const paged = await createTestApp(database, {
      SESSION_CACHE_MAX_BYTES: String(1024 * 1024),
      MAX_PAGE_BYTES: String(64 * 1024),
    });
    try {
      // Messages of 10,000 characters, about 20 kB each by the estimate: four fit in 64 KiB.
      const messages = (count: number) =>
        Array.from({ length: count }, (_, i) => ({
          role: 'USER',
          content: `${String(i).padStart(4, '0')}${'x'.repeat(9996)}`,
        }));
      const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
      // Too large to cache (about 1.2 MB): its pages come from the database.
      await paged.gql(APPEND_MANY, { input: { sessionId: 'wide', messages: messages(60) } });
      await paged.gql(APPEND_MANY, { input: { sessionId: 'narrow', messages: messages(10) } });
      const PAGE = `query($id: ID!, $after: String) { session(id: $id) { messages(first: 1000, after: $after) { pageInfo { hasNextPage endCursor } edges { node { content } } } } }`;
      for (const [sessionId, count] of [
        ['wide', 60],
        ['narrow', 10],
      ] as const) {
        const sizes: number[] = [];
        const seen: string[] = [];
        let after: string | null = null;
        for (;;) {
          const response = await paged.gql(PAGE, { id: sessionId, after });
          expect(response.errors).toBeUndefined();
          const connection = response.data.session.messages as {
            pageInfo: { hasNextPage: boolean; endCursor: string | null };
            edges: { node: { content: string } }[];
          };
          sizes.push(connection.edges.length);
          seen.push(...connection.edges.map((edge) => edge.node.content.slice(0, 4)));
          after = connection.pageInfo.endCursor;
          if (!connection.pageInfo.hasNextPage) break;
        }
        expect({ sessionId, seen }).toEqual({
          sessionId,
          seen: messages(count).map((message) => message.content.slice(0, 4)),
        });
        const full = Math.floor(count / 4);
        expect({ sessionId, sizes }).toEqual({
          sessionId,
          sizes: [...Array<number>(full).fill(4), ...(count % 4 ? [count % 4] : [])],
        });
      }
      // Astral characters are two UTF-16 units in the cache's estimate and four UTF-8 bytes in
      // the database's: a page from the database is never the larger. (Too large to cache.)
      const astral = Array.from({ length: 60 }, (_, i) => ({
        role: 'USER',
        content: `${String(i).padStart(4, '0')}${'😀'.repeat(4998)}`,
      }));
      await paged.gql(APPEND_MANY, { input: { sessionId: 'astral', messages: astral } });
      const sizes: number[] = [];
      let seen = 0;
      let after: string | null = null;
      for (;;) {
        const response = await paged.gql(PAGE, { id: 'astral', after });
        const connection = response.data.session.messages as {
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
          edges: { node: { content: string } }[];
        };
        sizes.push(connection.edges.length);
        for (const edge of connection.edges) {
          expect(edge.node.content.slice(0, 4)).toBe(String(seen++).padStart(4, '0'));
        }
        after = connection.pageInfo.endCursor;
        if (!connection.pageInfo.hasNextPage) break;
      }
      expect(seen).toBe(60);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    } finally {
      await paged.close();
    }
  });

  it('pages through sessions, most recently updated first', async () => {
    for (const id of ['list-a', 'list-b', 'list-c']) await append(id, 'x');
    const first = await sut.gql(
      `{ sessions(first: 2) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id } } } }`,
    );
    expect(first.data.sessions.pageInfo.hasPreviousPage).toBe(false);
    expect(first.data.sessions.pageInfo.startCursor).toBe(first.data.sessions.edges[0].cursor);
    expect(first.data.sessions.edges.map((edge: any) => edge.node.id)).toEqual([
      'list-c',
      'list-b',
    ]);
    expect(first.data.sessions.pageInfo.hasNextPage).toBe(true);
    const second = await sut.gql(
      `query($after: String) { sessions(first: 1, after: $after) { pageInfo { hasPreviousPage } edges { node { id } } } }`,
      {
        after: first.data.sessions.pageInfo.endCursor,
      },
    );
    expect(second.data.sessions.edges.map((edge: any) => edge.node.id)).toEqual(['list-a']);
    expect(second.data.sessions.pageInfo.hasPreviousPage).toBe(true);
  });

  it('stores a batch atomically and in order, in one round trip', async () => {
    const response = await sut.gql(APPEND_MANY, {
      input: {
        sessionId: 'batch',
        messages: [
          { role: 'SYSTEM', content: 'b0' },
          { role: 'USER', content: 'b1', clientMessageId: 'batch-1' },
          { role: 'ASSISTANT', content: 'b2' },
        ],
      },
    });
    expect(response.errors).toBeUndefined();
    expect(response.data.appendMessages.status).toBe('PERSISTED');
    expect(response.data.appendMessages.messages.map((m: any) => m.content)).toEqual([
      'b0',
      'b1',
      'b2',
    ]);
    expect(await contents('batch')).toEqual(['b0', 'b1', 'b2']);
  });

  it('answers a retried append with the stored message and stores nothing new', async () => {
    const first = await append('retry', 'once', { clientMessageId: 'client-1' });
    const again = await append('retry', 'once', { clientMessageId: 'client-1' });
    expect(again.message.id).toBe(first.message.id);
    expect(again.status).toBe('PERSISTED');
    const batchRetry = await sut.gql(APPEND_MANY, {
      input: {
        sessionId: 'retry',
        messages: [
          { role: 'USER', content: 'once', clientMessageId: 'client-1' },
          { role: 'USER', content: 'twice', clientMessageId: 'client-2' },
        ],
      },
    });
    expect(batchRetry.data.appendMessages.messages[0].id).toBe(first.message.id);
    expect(await contents('retry')).toEqual(['once', 'twice']);
  });

  it('answers a client id sent again with other content IDEMPOTENCY_CONFLICT, and stores nothing of that append', async () => {
    const metadata = { b: 1, a: { d: [1, 2], c: 'x' } };
    const first = await append('conflict', 'original', { clientMessageId: 'key-1', metadata });
    // The stored JSON may come back with its keys in another order: still the same message.
    const exact = await append('conflict', 'original', {
      clientMessageId: 'key-1',
      metadata: { a: { c: 'x', d: [1, 2] }, b: 1 },
    });
    expect(exact.message.id).toBe(first.message.id);

    for (const change of [
      { content: 'edited' },
      { role: 'ASSISTANT' },
      { metadata: { b: 2, a: { d: [1, 2], c: 'x' } } },
      { toolName: 'search' },
    ]) {
      const response = await sut.gql(APPEND_MANY, {
        input: {
          sessionId: 'conflict',
          messages: [
            { role: 'USER', content: 'would be new' },
            { role: 'USER', content: 'original', clientMessageId: 'key-1', metadata, ...change },
          ],
        },
      });
      expect(response.data?.appendMessages ?? null).toBeNull();
      expect(response.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_CONFLICT');
      expect(response.errors?.[0]?.message).toMatch(/^input\.messages\.1: clientMessageId "key-1"/);
    }
    expect(await contents('conflict')).toEqual(['original']);
  });

  describe('bad input gets BAD_USER_INPUT and changes nothing', () => {
    async function expectRejected(
      query: string,
      variables: Record<string, unknown>,
      field: RegExp,
    ): Promise<void> {
      const before = await sut.gql(`{ sessions(first: 1000) { totalCount } }`);
      const response = await sut.gql(query, variables);
      expect(response.data?.appendMessage ?? response.data?.appendMessages ?? null).toBeNull();
      expect(response.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message).toMatch(field);
      expect(JSON.stringify(response.body)).not.toMatch(
        /\bat .*\.(js|ts):\d+|node_modules|\/src\//,
      );
      const after = await sut.gql(`{ sessions(first: 1000) { totalCount } }`);
      expect(after.data.sessions.totalCount).toBe(before.data.sessions.totalCount);
    }

    it('refuses a malformed session id', async () => {
      await expectRejected(
        APPEND,
        { input: { sessionId: 'bad id/..', role: 'USER', content: 'x' } },
        /sessionId/,
      );
      await expectRejected(
        APPEND,
        { input: { sessionId: 'x'.repeat(129), role: 'USER', content: 'x' } },
        /sessionId/,
      );
      const read = await sut.gql(READ, { id: 'no spaces' });
      expect(read.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(read.errors?.[0]?.message).toMatch(/id/);
    });

    it('refuses a NUL character, which PostgreSQL could never store', async () => {
      await expectRejected(
        APPEND,
        { input: { sessionId: 'nul', role: 'USER', content: 'before\u0000after' } },
        /input\.content.*NUL/,
      );
    });

    it('refuses an unknown role', async () => {
      await expectRejected(
        APPEND,
        { input: { sessionId: 'bad-role', role: 'ROBOT', content: 'x' } },
        /role|MessageRole/,
      );
    });

    it('refuses content over MAX_MESSAGE_BYTES', async () => {
      await expectRejected(
        APPEND,
        { input: { sessionId: 'too-big', role: 'USER', content: 'é'.repeat(513) } },
        /input\.content.*1026 bytes.*1024/,
      );
    });

    it('refuses a batch over 1000 messages, or an empty one, without storing any of it', async () => {
      const messages = Array.from({ length: 1001 }, () => ({ role: 'USER', content: 'x' }));
      await expectRejected(
        APPEND_MANY,
        { input: { sessionId: 'huge-batch', messages } },
        /messages/,
      );
      await expectRejected(
        APPEND_MANY,
        { input: { sessionId: 'empty-batch', messages: [] } },
        /messages/,
      );
    });

    it('refuses a batch whose later message is invalid, storing none of it', async () => {
      await expectRejected(
        APPEND_MANY,
        {
          input: {
            sessionId: 'half-bad',
            messages: [
              { role: 'USER', content: 'fine' },
              { role: 'USER', content: 'x'.repeat(2000) },
            ],
          },
        },
        /input\.messages\.1\.content/,
      );
      await expectRejected(
        APPEND_MANY,
        {
          input: {
            sessionId: 'dup-client-ids',
            messages: [
              { role: 'USER', content: 'a', clientMessageId: 'same' },
              { role: 'USER', content: 'b', clientMessageId: 'same' },
            ],
          },
        },
        /input\.messages\.1\.clientMessageId/,
      );
    });

    it('refuses first out of range and a bad cursor', async () => {
      await append('range', 'x');
      for (const first of [0, -1, 1001]) {
        const response = await sut.gql(READ, { id: 'range', first });
        expect(response.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(response.errors?.[0]?.message).toMatch(/first/);
      }
      for (const after of ['not-a-cursor', Buffer.from('scribe:v1:').toString('base64url'), '!!']) {
        const response = await sut.gql(READ, { id: 'range', after });
        expect(response.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(response.errors?.[0]?.message).toMatch(/after/);
      }
      const sessions = await sut.gql(`{ sessions(after: "bm9wZQ") { totalCount } }`);
      expect(sessions.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    });

    it('refuses unknown fields', async () => {
      await expectRejected(
        APPEND,
        { input: { sessionId: 'unknown-field', role: 'USER', content: 'x', colour: 'red' } },
        /colour/,
      );
      const response = await sut.gql(`{ session(id: "x") { id nonsense } }`);
      expect(response.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(response.errors?.[0]?.message).toMatch(/nonsense/);
    });
  });

  it('refuses queries that could read more than 100,000 messages or too many transcripts, before running them', async () => {
    const costly = await sut.gql(
      `{ sessions(first: 1000) { edges { node { messages(first: 1000) { totalCount } } } } }`,
    );
    expect(costly.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(costly.errors?.[0]?.message).toMatch(/1000000 messages/);
    // The verdict on a document is remembered, but never across different `first` variables.
    const again = await sut.gql(
      `{ sessions(first: 1000) { edges { node { messages(first: 1000) { totalCount } } } } }`,
    );
    expect(again.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    const byVariable = `query($n: Int) { sessions(first: $n) { edges { node { messages(first: 1000) { totalCount } } } } }`;
    expect((await sut.gql(byVariable, { n: 10 })).errors).toBeUndefined();
    const tooMany = await sut.gql(byVariable, { n: 1000 });
    expect(tooMany.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect((await sut.gql(byVariable, { n: 10 })).errors).toBeUndefined();
    const aliased = await sut.gql(
      `{ ${Array.from({ length: 101 }, (_, i) => `s${i}: session(id: "x") { messages(first: 1000) { totalCount } }`).join(' ')} }`,
    );
    expect(aliased.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    const fine = await sut.gql(
      `{ sessions(first: 10) { edges { node { messages(first: 1000) { totalCount } } } } }`,
    );
    expect(fine.errors).toBeUndefined();
    // Scribe's own types nest 7 levels at most: only introspection goes deeper, and it does
    // not count (GraphQL tools send it); the token limit bounds it.
    const deep = await sut.gql(
      `{ session(id: "x") { messages { edges { node { id } } } } ${'a: __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }'} }`,
    );
    expect(deep.errors).toBeUndefined();
  });

  it('answers a body over MAX_BODY_BYTES with 413 and no stack trace', async () => {
    const response = await sut
      .http()
      .post('/graphql')
      .set('content-type', 'application/json')
      .send({
        query: APPEND,
        variables: { input: { sessionId: 'x', role: 'USER', content: 'y'.repeat(80_000) } },
      });
    expect(response.status).toBe(413);
    expect(response.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    expect(response.text).not.toMatch(/node_modules|at .*\.js/);
  });

  it('reports health per component and serves Prometheus metrics', async () => {
    const health = await sut.http().get('/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      status: 'ok',
      details: { database: { status: 'up' }, spool: { status: 'up' } },
    });
    expect(health.text).not.toContain(sut.dataDir);
    await append('metrics', 'counted');
    const metrics = await sut.http().get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/text\/plain/);
    expect(metrics.text).toMatch(/^scribe_appends_total\{status="persisted"\} [1-9]\d*$/m);
    expect(metrics.text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(metrics.text).toMatch(/^scribe_pending_messages 0$/m);
  });
});
