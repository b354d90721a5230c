import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const LIST = `query($filter: SessionFilter, $first: Int, $after: String) {
  sessions(filter: $filter, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage endCursor }
    edges { node { id title updatedAt } }
  }
}`;

interface Listed {
  totalCount: number;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string | null };
  edges: { node: { id: string; title: string | null; updatedAt: string } }[];
}

describe.each(databaseKinds())('the session list filter on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database);
  });

  afterAll(async () => {
    await sut.close();
  });

  async function list(variables: Record<string, unknown>): Promise<Listed> {
    const answer = await sut.gql(LIST, variables);
    expect(answer.errors).toBeUndefined();
    return answer.data.sessions as Listed;
  }

  const ids = (listed: Listed) => listed.edges.map((edge) => edge.node.id);

  async function touch(sessionId: string): Promise<string> {
    const answer = await sut.gql(APPEND, {
      input: { sessionId, role: 'USER', content: 'x' },
    });
    expect(answer.data?.appendMessage?.status).toBe('PERSISTED');
    const read = await sut.gql(`query($id: ID!) { session(id: $id) { updatedAt } }`, {
      id: sessionId,
    });
    return read.data.session.updatedAt as string;
  }

  it('keeps the sessions updated at or after updatedSince, newest first, counting only those', async () => {
    const old = await touch('since-old');
    let cut = await touch('since-middle');
    // Stored in a later millisecond than the old one, whatever the clock did.
    while (Date.parse(cut) <= Date.parse(old)) cut = await touch('since-middle');
    await touch('since-new');

    const listed = await list({ filter: { updatedSince: cut } });

    expect(ids(listed).slice(0, 2)).toEqual(['since-new', 'since-middle']);
    expect(ids(listed)).not.toContain('since-old');
    expect(listed.totalCount).toBe(listed.edges.length);
    for (const edge of listed.edges) {
      expect(Date.parse(edge.node.updatedAt)).toBeGreaterThanOrEqual(Date.parse(cut));
    }
  });

  it('keeps the sessions whose title contains the text, case and all, and pages them truly', async () => {
    for (const id of ['title-a', 'title-b', 'title-c', 'title-d']) await touch(id);
    const titles: Record<string, string> = {
      'title-a': 'Trip to Lisbon',
      'title-b': 'lisbon notes',
      'title-c': 'Budget: Lisbon 😀',
      'title-d': 'Porto',
    };
    for (const [id, title] of Object.entries(titles)) {
      const answer = await sut.gql(
        `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { title } }`,
        { input: { id, title } },
      );
      expect(answer.data?.updateSession?.title).toBe(title);
    }

    const all = await list({ filter: { titleContains: 'Lisbon' } });
    expect(ids(all).sort()).toEqual(['title-a', 'title-c']);
    expect(all.totalCount).toBe(2);
    expect(
      (await list({ filter: { titleContains: 'on 😀' } })).edges.map((e) => e.node.title),
    ).toEqual(['Budget: Lisbon 😀']);

    const first = await list({ filter: { titleContains: 'Lisbon' }, first: 1 });
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const second = await list({
      filter: { titleContains: 'Lisbon' },
      first: 1,
      after: first.pageInfo.endCursor,
    });
    expect(second.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    expect([...ids(first), ...ids(second)].sort()).toEqual(['title-a', 'title-c']);
  });

  it.each([
    ['empty', '', /1 to 200 characters/],
    ['of 201 characters', 'x'.repeat(201), /1 to 200 characters/],
    ['holding NUL', 'a\u0000b', /NUL/],
    ['holding a lone surrogate', '\uD800', /lone UTF-16 surrogate/],
  ])('refuses a titleContains %s with BAD_USER_INPUT naming the field', async (_, text, reason) => {
    const answer = await sut.gql(LIST, { filter: { titleContains: text } });

    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(answer.errors?.[0]?.message).toMatch(/filter\.titleContains/);
    expect(answer.errors?.[0]?.message).toMatch(reason);
  });

  it('refuses an updatedSince that is not a date-time', async () => {
    const answer = await sut.gql(LIST, { filter: { updatedSince: 'yesterday' } });

    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
