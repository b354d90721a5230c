import { JwtService } from '@nestjs/jwt';
import { getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { SCRIBE_CONNECTION } from '../src/database/database.tokens.js';
import { SearchBackfill } from '../src/database/search-backfill.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// Full-text search: words, phrases and prefixes, case and accents aside, best first; every
// user character taken as text, never as an operator; within what the caller may read.
const SECRET = 'search-suite-secret-of-32-bytes!';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) => ({
  authorization: `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`,
});
const ADMIN = { authorization: 'Bearer ops' };
const U1 = bearer({ sub: 'u1', scope: 'read', session_prefix: 'u1-' });

const SEARCH = `query($q: String!, $s: ID, $first: Int, $after: String) {
  searchMessages(query: $q, sessionId: $s, first: $first, after: $after) {
    pageInfo { hasNextPage hasPreviousPage endCursor }
    edges { cursor node { sessionId messageCursor message { id content status } snippet { text highlights { start length } } } }
  }
}`;

interface Match {
  sessionId: string;
  messageCursor: string;
  message: { id: string; content: string; status: string };
  snippet: { text: string; highlights: { start: number; length: number }[] };
}

const MESSAGES: [string, string][] = [
  ['u1-a', 'The quick brown fox jumps over the lazy dog'],
  ['u1-a', 'A recipe for crème brûlée, and a naïve café au lait'],
  ['u1-b', 'decomposed: cafe\u0301 and re\u0301sume\u0301'],
  ['u1-b', 'astral: I love 🦊 foxes and 𝒻𝑜𝓍 letters, 北京 too'],
  ['u2-a', 'Another user: the quick brown fox of u2'],
  ['u2-a', `quotes "everywhere" and 'here' (NEAR brackets) AND OR NOT`],
  ['scripts-1', '한국어 텍스트, ΟΔΟΣ and οδος, mail alice@example.com, pi 3.14, v1.2.3'],
];

describe.each(databaseKinds())('searchMessages on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    // Pages of at most 1 MiB: three bulky matches do not fit in one.
    sut = await createTestApp(database, {
      API_TOKENS: 'ops=admin',
      JWT_SECRET: SECRET,
      MAX_PAGE_BYTES: String(1024 * 1024),
    });
    for (const [sessionId, content] of MESSAGES) {
      const answer = await sut.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId, role: 'USER', content } },
        ADMIN,
      );
      expect(answer.data?.appendMessage.status).toBe('PERSISTED');
    }
  });

  afterAll(() => sut.close());

  async function search(
    q: string,
    headers: Record<string, string> = ADMIN,
    variables: Record<string, unknown> = {},
  ) {
    const answer = await sut.gql(SEARCH, { q, ...variables }, headers);
    expect(answer.errors).toBeUndefined();
    const connection = answer.data.searchMessages as {
      pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string | null };
      edges: { cursor: string; node: Match }[];
    };
    return { ...connection, matches: connection.edges.map((edge) => edge.node) };
  }
  const contents = (matches: Match[]) => matches.map((match) => match.message.content).sort();

  it('finds every message holding all the words, case aside, with a marked snippet', async () => {
    const { matches } = await search('QUICK fox');
    expect(contents(matches)).toEqual([MESSAGES[4][1], MESSAGES[0][1]].sort());
    const own = matches.find((match) => match.sessionId === 'u1-a')!;
    expect(own.message.status).toBe('PERSISTED');
    const marked = own.snippet.highlights.map(({ start, length }) =>
      own.snippet.text.slice(start, start + length),
    );
    expect(marked).toEqual(['quick', 'fox']);
  });

  it('takes accents and decomposed characters as their letters', async () => {
    expect(contents((await search('creme brulee')).matches)).toEqual([MESSAGES[1][1]]);
    expect(contents((await search('café')).matches)).toEqual(
      [MESSAGES[1][1], MESSAGES[2][1]].sort(),
    );
    expect(contents((await search('re\u0301sume\u0301')).matches)).toEqual([MESSAGES[2][1]]);
    expect(contents((await search('NAIVE')).matches)).toEqual([MESSAGES[1][1]]);
  });

  it('finds astral and CJK words, and prefixes with *', async () => {
    expect(contents((await search('𝒻𝑜𝓍')).matches)).toEqual([MESSAGES[3][1]]);
    expect(contents((await search('北京')).matches)).toEqual([MESSAGES[3][1]]);
    expect(contents((await search('fox*', U1)).matches)).toEqual(
      [MESSAGES[0][1], MESSAGES[3][1]].sort(),
    );
    expect((await search('fo', U1)).matches).toEqual([]);
  });

  it('finds Hangul, Greek in either case, and words of addresses and numbers, on both databases', async () => {
    const scripts = [MESSAGES[6][1]];
    for (const q of [
      '한국어',
      '한*',
      'ΟΔΟΣ',
      'οδος',
      'Οδος',
      'alice@example.com',
      'example',
      '3.14',
      '"v1 2 3"',
    ]) {
      expect({ q, found: contents((await search(q)).matches) }).toEqual({ q, found: scripts });
    }
  });

  it('stores a message whose words pass the index’s own limit, and every append after it', async () => {
    // Some 800 KB of distinct words: past a PostgreSQL tsvector's 1 MiB (its start is indexed).
    const words = Array.from({ length: 110_000 }, (_, i) => `w${i.toString(36)}`).join(' ');
    for (const [sessionId, content] of [
      ['poison-1', `${words} tailword`],
      ['poison-2', 'after the large one'],
      ['poison-3', 'and another session after it'],
    ]) {
      const answer = await sut.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId, role: 'USER', content } },
        ADMIN,
      );
      expect({ sessionId, status: answer.data?.appendMessage.status }).toEqual({
        sessionId,
        status: 'PERSISTED',
      });
    }
    expect((await search('w0 w1')).matches.map((match) => match.sessionId)).toEqual(['poison-1']);
    expect((await search('after the large')).matches).toHaveLength(1);
  });

  it('holds two searches a request, not thirty', async () => {
    const aliases = (count: number) =>
      `{ ${Array.from({ length: count }, (_, i) => `s${i}: searchMessages(query: "fox*") { edges { cursor } }`).join(' ')} }`;
    const two = await sut.gql(aliases(2), undefined, ADMIN);
    expect(two.errors).toBeUndefined();
    const three = await sut.gql(aliases(3), undefined, ADMIN);
    expect(three.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(three.data).toBeUndefined();
  });

  it('takes quotes as phrases and every other operator as a word or a separator', async () => {
    expect(contents((await search('"quick brown" fox', U1)).matches)).toEqual([MESSAGES[0][1]]);
    expect((await search('"brown quick"', U1)).matches).toEqual([]);
    // NEAR, AND, OR, NOT and parentheses are words here: only the message holding them matches.
    expect(contents((await search('NEAR(brackets) AND OR NOT')).matches)).toEqual([MESSAGES[5][1]]);
    expect(contents((await search(`"everywhere" 'here' -quotes ^`)).matches)).toEqual([
      MESSAGES[5][1],
    ]);
    expect(contents((await search('quick:fox* col:* {a b}')).matches)).toEqual([]);
    expect((await search(`'; DROP TABLE messages; --`)).matches).toEqual([]);
    expect((await search('quick')).matches).toHaveLength(2);
  });

  it.each([
    ['an open quote', '"quick brown', 'query: a quote is not closed'],
    ['no word', '* () "" -', 'query: holds no word to search for'],
    ['a NUL', 'quick\u0000fox', undefined],
    ['a lone surrogate', 'quick\ud800', undefined],
    ['too long a query', 'x'.repeat(201), 'query: must be 1 to 200 characters long'],
    ['too many terms', Array.from({ length: 17 }, (_, i) => `w${i}`).join(' '), undefined],
  ])('refuses %s with BAD_USER_INPUT and a reason', async (_what, q, message) => {
    const answer = await sut.gql(SEARCH, { q }, ADMIN);
    expect(answer.status).toBe(200);
    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    if (message) expect(answer.errors?.[0]?.message).toBe(message);
    expect(JSON.stringify(answer.body)).not.toMatch(/SQLITE|syntax|fts5|tsquery/i);
  });

  it('orders a prefix token’s matches by nothing other users’ messages can move', async () => {
    const before = (await search('fox*', U1)).matches.map((match) => match.message.id);
    // Others' messages holding one of the words would move a ranking by how rare words are.
    for (let i = 0; i < 6; i++) {
      await sut.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId: `u2-rank-${i}`, role: 'USER', content: 'foxes foxes foxes' } },
        ADMIN,
      );
    }
    expect((await search('fox*', U1)).matches.map((match) => match.message.id)).toEqual(before);
  });

  it('keeps a prefix token to its own sessions, in every way it can ask', async () => {
    const own = await search('quick fox', U1);
    expect(own.matches.map((match) => match.sessionId)).toEqual(['u1-a']);
    expect(contents((await search('user', U1)).matches)).toEqual([]);
    const other = await sut.gql(SEARCH, { q: 'fox', s: 'u2-a' }, U1);
    expect(other.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(other.data).toBeNull();
    const inOwn = await search('fox*', U1, { s: 'u1-b' });
    expect(contents(inOwn.matches)).toEqual([MESSAGES[3][1]]);
    // A cursor taken from an admin's search pages the caller's own matches only.
    const all = await search('fox*', ADMIN, { first: 1 });
    const after = await search('fox*', U1, { after: all.pageInfo.endCursor });
    expect(after.matches.every((match) => match.sessionId.startsWith('u1-'))).toBe(true);
  });

  it('gives the cursor that opens the transcript at the match, either way', async () => {
    const [match] = (await search('creme')).matches;
    const around = async (direction: string) => {
      const read = await sut.gql(
        `query($id: ID!, $c: String) { session(id: $id) { messages(${direction}: $c) { edges { node { content } } } } }`,
        { id: match.sessionId, c: match.messageCursor },
        ADMIN,
      );
      expect(read.errors).toBeUndefined();
      return read.data.session.messages.edges.map(
        (edge: { node: { content: string } }) => edge.node.content,
      );
    };
    expect(await around('last: 5, before')).toEqual([MESSAGES[0][1]]);
    expect(await around('first: 5, after')).toEqual([]);
  });

  it('pages the matches, none twice, and refuses a forged cursor', async () => {
    const first = await search('fox*', ADMIN, { first: 2 });
    expect(first.matches).toHaveLength(2);
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const rest = await search('fox*', ADMIN, { first: 10, after: first.pageInfo.endCursor });
    expect(rest.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    const ids = [...first.matches, ...rest.matches].map((match) => match.message.id);
    const all = (await search('fox*', ADMIN, { first: 100 })).matches;
    expect(ids).toEqual(all.map((match) => match.message.id));
    expect(new Set(ids).size).toBe(ids.length);
    for (const after of [
      'bm90LWEtY3Vyc29y',
      Buffer.from('scribe:v1:match:99999').toString('base64url'),
    ]) {
      const forged = await sut.gql(SEARCH, { q: 'fox', after }, ADMIN);
      expect(forged.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });

  it('ends a page early once its messages reach MAX_PAGE_BYTES', async () => {
    const bulk = `bulky ${'x'.repeat(300_000)}`;
    for (const clientMessageId of ['b1', 'b2', 'b3']) {
      const answer = await sut.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId: 'bulk-1', role: 'USER', content: bulk, clientMessageId } },
        ADMIN,
      );
      expect(answer.data?.appendMessage.status).toBe('PERSISTED');
    }
    // About 600 KB each as the budget counts (two bytes a character): two reach 1 MiB.
    const page = await search('bulky', ADMIN, { first: 3 });
    expect(page.matches).toHaveLength(2);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const rest = await search('bulky', ADMIN, { first: 3, after: page.pageInfo.endCursor });
    expect(rest.matches).toHaveLength(1);
    expect(rest.matches[0].snippet.text.length).toBeLessThanOrEqual(162);
  });

  it('forgets a deleted session’s messages', async () => {
    await sut.gql(
      `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
      { input: { sessionId: 'gone-1', role: 'USER', content: 'ephemeral zebra' } },
      ADMIN,
    );
    expect((await search('zebra')).matches).toHaveLength(1);
    const deleted = await sut.gql(
      `mutation { deleteSession(id: "gone-1") { storedMessages } }`,
      {},
      ADMIN,
    );
    expect(deleted.errors).toBeUndefined();
    expect((await search('zebra')).matches).toEqual([]);
  });

  it('indexes the messages stored before search existed, in batches, once each', async () => {
    const dataSource = sut.app.get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION));
    // As a database migrated from before: nothing indexed, the backfill at its start.
    if (database === 'postgres') {
      await dataSource.query(`ALTER TABLE "messages" DISABLE TRIGGER "messages_search"`);
      await dataSource.query(`UPDATE "messages" SET "search_vector" = NULL`);
      await dataSource.query(`ALTER TABLE "messages" ENABLE TRIGGER "messages_search"`);
      await dataSource.query(
        `UPDATE "message_search_backfill" SET "after_id" = '', "done" = false`,
      );
    } else {
      await dataSource.query(`DELETE FROM "messages_search"`);
      await dataSource.query(
        `UPDATE "message_search_backfill" SET "after_rowid" = 0, "last_rowid" = (SELECT max("rowid") FROM "messages")`,
      );
    }
    expect((await search('quick')).matches).toEqual([]);
    const backfill = sut.app.get(SearchBackfill);
    let batches = 0;
    while (await backfill.batch()) batches += 1;
    expect(batches).toBeGreaterThan(0);
    expect((await search('quick')).matches).toHaveLength(2);
    // Run again from the start: still one match per message.
    if (database === 'sqlite') {
      await dataSource.query(`UPDATE "message_search_backfill" SET "after_rowid" = 0`);
      while (await backfill.batch());
      expect((await search('quick')).matches).toHaveLength(2);
    }
  });
});
