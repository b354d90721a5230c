import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// Relay paging both ways over a 2,500-message transcript: from the session cache (the
// transcript held whole) and from the database (a cache too small to hold it).
const TOTAL = 2500;
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
const PAGE = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  session(id: $id) {
    messages(first: $first, after: $after, last: $last, before: $before) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      edges { cursor node { content } }
    }
  }
}`;

interface Connection {
  totalCount: number;
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
  edges: { cursor: string; node: { content: string } }[];
}

// 400 characters each: 2,500 of them pass the smallest SESSION_CACHE_MAX_BYTES (1 MiB).
const label = (n: number) => `m${String(n).padStart(5, '0')}`.padEnd(400, '.');
const labels = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => label(from + i));

describe.each(databaseKinds())('paging a transcript both ways on %s', (database) => {
  describe.each([
    ['from the session cache', {}],
    ['from the database', { SESSION_CACHE_MAX_BYTES: String(1024 * 1024) }],
  ] as const)('%s', (_, settings) => {
    let sut: TestApp;

    beforeAll(async () => {
      sut = await createTestApp(database, settings);
    });

    afterAll(async () => {
      await sut.close();
    });

    async function fill(sessionId: string, from: number, to: number): Promise<void> {
      for (let start = from; start < to; start += 1000) {
        const messages = labels(start, Math.min(to, start + 1000)).map((content) => ({
          role: 'USER',
          content,
        }));
        const answer = await sut.gql(APPEND_MANY, { input: { sessionId, messages } });
        expect(answer.data?.appendMessages?.status).toBe('PERSISTED');
      }
    }

    async function page(variables: Record<string, unknown>): Promise<Connection> {
      pageBudget();
      const answer = await sut.gql(PAGE, variables);
      expect(answer.errors).toBeUndefined();
      return answer.data.session.messages as Connection;
    }

    const contents = (connection: Connection) => connection.edges.map((edge) => edge.node.content);

    // Paging that never ends is a failure, said at once rather than at the test's timeout.
    let pagesLeft = 0;
    const pageBudget = () => {
      if (--pagesLeft < 0) throw new Error('paging did not end within its budget of pages');
    };

    beforeEach(() => {
      pagesLeft = 60;
    });

    it('gives every message exactly once forward with first/after, and backward with last/before', async () => {
      await fill('both-ways', 0, TOTAL);

      const forward: string[] = [];
      let after: string | null = null;
      for (let n = 0; ; n++) {
        const connection = await page({ id: 'both-ways', first: 300, after });
        expect(connection.totalCount).toBe(TOTAL);
        expect(connection.pageInfo.hasPreviousPage).toBe(n > 0);
        expect(connection.pageInfo.startCursor).toBe(connection.edges[0]?.cursor ?? null);
        forward.push(...contents(connection));
        after = connection.pageInfo.endCursor;
        if (!connection.pageInfo.hasNextPage) break;
      }
      expect(forward).toEqual(labels(0, TOTAL));

      const backward: string[] = [];
      let before: string | null = null;
      for (let n = 0; ; n++) {
        const connection = await page({ id: 'both-ways', last: 300, before });
        // Paging back from `before`, messages lie at and after it.
        expect(connection.pageInfo.hasNextPage).toBe(n > 0);
        expect(connection.pageInfo.endCursor).toBe(connection.edges.at(-1)?.cursor ?? null);
        backward.unshift(...contents(connection));
        before = connection.pageInfo.startCursor;
        if (!connection.pageInfo.hasPreviousPage) break;
      }
      expect(backward).toEqual(labels(0, TOTAL));
    });

    it('answers last: 50 with the newest 50, oldest first', async () => {
      await fill('newest', 0, 120);

      const connection = await page({ id: 'newest', last: 50 });

      expect(contents(connection)).toEqual(labels(70, 120));
      expect(connection.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    });

    it('keeps cursors stable while appends go on: back from a cursor nothing moves, forward every new message comes once', async () => {
      await fill('busy', 0, TOTAL);
      const start = await page({ id: 'busy', last: 1 });
      let appended = TOTAL;

      const backward: string[] = contents(start);
      let before = start.pageInfo.startCursor;
      for (;;) {
        await fill('busy', appended, appended + 7);
        appended += 7;
        const connection = await page({ id: 'busy', last: 400, before });
        backward.unshift(...contents(connection));
        before = connection.pageInfo.startCursor;
        if (!connection.pageInfo.hasPreviousPage) break;
      }
      expect(backward).toEqual(labels(0, TOTAL));

      const forward: string[] = [];
      let after: string | null = null;
      for (;;) {
        const connection = await page({ id: 'busy', first: 400, after });
        forward.push(...contents(connection));
        after = connection.pageInfo.endCursor;
        if (!connection.pageInfo.hasNextPage) break;
        await fill('busy', appended, appended + 7);
        appended += 7;
      }
      expect(forward).toEqual(labels(0, appended));
    });

    it('refuses first with last, counts out of bounds and a foreign before cursor, with BAD_USER_INPUT', async () => {
      await fill('refused', 0, 3);
      const asks: [Record<string, unknown>, RegExp][] = [
        [{ first: 1, last: 1 }, /last: cannot be given with first/],
        [{ last: 0 }, /last/],
        [{ last: 1001 }, /last/],
        [{ last: 1, before: 'not-a-cursor' }, /before/],
      ];
      for (const [variables, message] of asks) {
        const answer = await sut.gql(PAGE, { id: 'refused', ...variables });
        expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(answer.errors?.[0]?.message).toMatch(message);
      }
    });
  });
});
