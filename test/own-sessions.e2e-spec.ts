import { JwtService } from '@nestjs/jwt';
import { getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { SCRIBE_CONNECTION } from '../src/database/database.tokens.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// A user's own conversation list: `sessions` with a JWT limited to a session prefix lists the
// sessions under that prefix, with the filter, order, paging and totalCount of everyone's, and
// reads them as one range of the id's index, not every row.
const SECRET = 'own-sessions-secret-of-32-bytes!';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) => ({
  authorization: `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`,
});
const ADMIN = { authorization: 'Bearer ops' };
const U1 = bearer({ sub: 'u1', scope: 'read append', session_prefix: 'u1-' });

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const TITLE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { id } }`;
const LIST = `query($filter: SessionFilter, $first: Int, $after: String) {
  sessions(filter: $filter, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage endCursor }
    edges { cursor node { id } }
  }
}`;

interface Listed {
  totalCount: number;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string | null };
  edges: { cursor: string; node: { id: string } }[];
}

// In the order they are written, so the list (newest first) is this reversed. `u1.z` is the
// range's first id past the prefix (`-` + 1 is `.`), `u10-x` and `u1` share its first characters.
const WRITTEN = ['u1-', 'u2-a', 'u1-a', 'u10-x', 'u1.z', 'u1-b', 'u1', 'u1-c', 'U1-d'];
const OWN = ['u1-c', 'u1-b', 'u1-a', 'u1-'];

describe.each(databaseKinds())('a caller limited to a session prefix on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, { API_TOKENS: 'ro=read,ops=admin', JWT_SECRET: SECRET });
    for (const sessionId of WRITTEN) {
      const answer = await sut.gql(
        APPEND,
        { input: { sessionId, role: 'USER', content: 'x' } },
        ADMIN,
      );
      expect(answer.data?.appendMessage.status).toBe('PERSISTED');
      // The next one is stored a millisecond later at least, so that the order is the writes'.
      const answered = Date.now();
      while (Date.now() <= answered) await new Promise((resolve) => setImmediate(resolve));
    }
    const titled = await sut.gql(TITLE, { input: { id: 'u1-b', title: 'Trip plans' } }, ADMIN);
    expect(titled.errors).toBeUndefined();
    const other = await sut.gql(TITLE, { input: { id: 'u2-a', title: 'Trip plans' } }, ADMIN);
    expect(other.errors).toBeUndefined();
  });

  afterAll(() => sut.close());

  async function list(headers: Record<string, string>, variables: Record<string, unknown> = {}) {
    const answer = await sut.gql<{ sessions: Listed }>(LIST, variables, headers);
    expect(answer.errors).toBeUndefined();
    return answer.data!.sessions;
  }
  const ids = (listed: Listed) => listed.edges.map((edge) => edge.node.id);

  it('lists exactly its own sessions, newest first, and counts only those', async () => {
    const own = await list(U1, { first: 50 });
    expect(ids(own)).toEqual(OWN);
    expect(own.totalCount).toBe(OWN.length);
    expect(own.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
  });

  it('lists everything for an admin or a token not limited to a prefix', async () => {
    for (const headers of [ADMIN, { authorization: 'Bearer ro' }]) {
      const all = await list(headers, { first: 50 });
      expect(ids(all)).toEqual([...WRITTEN].reverse());
      expect(all.totalCount).toBe(WRITTEN.length);
    }
  });

  it('pages its own sessions as everyone’s are paged', async () => {
    const first = await list(U1, { first: 3 });
    expect(ids(first)).toEqual(OWN.slice(0, 3));
    expect(first.pageInfo.hasNextPage).toBe(true);
    expect(first.totalCount).toBe(OWN.length);
    const second = await list(U1, { first: 3, after: first.pageInfo.endCursor });
    expect(ids(second)).toEqual(OWN.slice(3));
    expect(second.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
  });

  it('keeps to its own sessions after a cursor taken from another caller’s list', async () => {
    const all = await list(ADMIN, { first: 50 });
    // The cursor of `u2-a`, the second oldest: after it come only the oldest, u1- among them.
    const foreign = all.edges.find((edge) => edge.node.id === 'u2-a')!.cursor;
    const after = await list(U1, { first: 50, after: foreign });
    expect(ids(after)).toEqual(['u1-']);
    expect(after.totalCount).toBe(OWN.length);
  });

  it('applies the filter within its own sessions', async () => {
    const titled = await list(U1, { filter: { titleContains: 'Trip' } });
    expect(ids(titled)).toEqual(['u1-b']);
    expect(titled.totalCount).toBe(1);
    const everyone = await list(ADMIN, { filter: { titleContains: 'Trip' } });
    expect(ids(everyone).sort()).toEqual(['u1-b', 'u2-a']);
  });

  it('is a prefix of the characters, with no range past it: u1 lists u1, u1-…, u1.z and u10-x', async () => {
    const wider = await list(bearer({ scope: 'read', session_prefix: 'u1' }), { first: 50 });
    expect(ids(wider).sort()).toEqual(['u1', 'u1-', 'u1-a', 'u1-b', 'u1-c', 'u1.z', 'u10-x']);
    const exact = await list(bearer({ scope: 'read', session_prefix: 'u1-b' }), { first: 50 });
    expect(ids(exact)).toEqual(['u1-b']);
    const none = await list(bearer({ scope: 'read', session_prefix: 'zz' }), { first: 50 });
    expect(none).toMatchObject({ totalCount: 0, edges: [] });
  });

  it('refuses a session of another prefix still, and lists nothing without read', async () => {
    const other = await sut.gql(`{ session(id: "u2-a") { id } }`, undefined, U1);
    expect(other.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const noRead = await sut.gql(
      `{ sessions { totalCount } }`,
      undefined,
      bearer({ scope: 'append', session_prefix: 'u1-' }),
    );
    expect(noRead.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(noRead.data).toBeNull();
  });

  it('reads the prefix as a range of an index on the id, never every row', async () => {
    expect(await prefixedPlans(false)).toHaveLength(2);
  });

  it('keeps to that range when the caller is idle and every other user is newer', async () => {
    const dataSource = sut.app.get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION));
    // The caller's 2,000 sessions are old, and 20,000 of others' all newer: walking the list
    // from the newest (which a 10% share makes look cheap) passes all of those first.
    const insert = (prefix: string, count: number, from: number) =>
      dataSource.query(
        database === 'postgres'
          ? `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") SELECT '${prefix}' || g, ${from} + g, ${from} + g, 0, 0 FROM generate_series(1, ${count}) g`
          : `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${count}) INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") SELECT '${prefix}' || n, ${from} + n, ${from} + n, 0, 0 FROM g`,
      );
    await insert('u1-old-', 2000, 1000);
    await insert('zz-', 20_000, Date.now());
    await dataSource.query('ANALYZE');
    // Without overriding the planner this time: its own choice, with the statistics.
    expect(await prefixedPlans(true)).toHaveLength(2);
    expect((await list(U1, { first: 50 })).totalCount).toBe(OWN.length + 2000);
  });

  /** The plans of the prefix list's statements, each checked to read the id's index. */
  async function prefixedPlans(asPlanned: boolean): Promise<string[]> {
    const dataSource = sut.app.get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION));
    const statements: [string, unknown[]][] = [];
    const logger = dataSource.logger;
    const capture = Object.create(logger) as typeof logger;
    capture.logQuery = (query: string, parameters?: unknown[]) => {
      statements.push([query, parameters ?? []]);
    };
    (dataSource as { logger: typeof logger }).logger = capture;
    try {
      await list(U1, { first: 2 });
    } finally {
      (dataSource as { logger: typeof logger }).logger = logger;
    }
    // The page's sizes and totalCount (no cursor: nothing asked about what came before).
    const prefixed = statements.filter(([query]) => /\bid\b[^<>]*>=/.test(query));
    const plans: string[] = [];
    for (const [query, parameters] of prefixed) {
      const plan = await explain(dataSource, query, parameters, asPlanned);
      expect(plan).toMatch(
        database === 'postgres'
          ? /(Index|Bitmap Index) (Only )?Scan (using|on) "?IDX_sessions_id_bytes"?/
          : /USING (COVERING )?INDEX sqlite_autoindex_sessions_1 \(id>\? AND id<\?\)/,
      );
      expect(plan).not.toMatch(/IDX_sessions_updated/);
      plans.push(plan);
    }
    return plans;
  }
});

/**
 * The plan of one statement. PostgreSQL's planner reads a table this small whole whatever
 * indexes it has, so a sequential scan is ruled out for the question asked: can an index serve
 * the prefix? (If none can, it still scans, and the plan says so.)
 */
async function explain(
  dataSource: DataSource,
  query: string,
  parameters: unknown[],
  asPlanned = false,
) {
  if (dataSource.options.type !== 'postgres') {
    const rows = await dataSource.query<{ detail: string }[]>(
      `EXPLAIN QUERY PLAN ${query}`,
      parameters,
    );
    return rows.map((row) => row.detail).join('\n');
  }
  const runner = dataSource.createQueryRunner();
  try {
    await runner.startTransaction();
    if (!asPlanned) await runner.query('SET LOCAL enable_seqscan = off');
    const rows = (await runner.query(`EXPLAIN ${query}`, parameters)) as Record<string, string>[];
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await runner.rollbackTransaction();
    await runner.release();
  }
}
