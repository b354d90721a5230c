import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const UPDATE = `mutation($input: UpdateSessionInput!) {
  updateSession(input: $input) { id title metadata revision messageCount }
}`;
const READ = `query($id: ID!) {
  session(id: $id) { title metadata revision messageCount messages { totalCount } }
}`;

describe.each(databaseKinds())('updateSession on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, {
      API_TOKENS: 'rw=read+append,ro=read',
      MAX_MESSAGE_BYTES: '2048',
      MAX_BODY_BYTES: '70000',
    });
  });

  afterAll(() => sut.close());

  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  async function started(sessionId: string): Promise<void> {
    const answer = await sut.gql(
      APPEND,
      { input: { sessionId, role: 'USER', content: 'hello' } },
      as('rw'),
    );
    expect(answer.data?.appendMessage?.status).toBe('PERSISTED');
  }

  const update = (input: Record<string, unknown>, token = 'rw') =>
    sut.gql(UPDATE, { input }, as(token));
  const read = async (id: string) => (await sut.gql(READ, { id }, as('rw'))).data.session;

  it('sets the title and metadata, moves the revision on by one, and every read sees it at once', async () => {
    await started('titled');
    // A full read puts the session in this instance's cache: the update must not leave it stale.
    expect(await read('titled')).toMatchObject({ title: null, metadata: null, revision: 1 });

    const answer = await update({
      id: 'titled',
      expectedRevision: 1,
      title: 'Trip to Lisbon',
      metadata: { lang: 'pt', tags: ['travel'] },
    });

    expect(answer.errors).toBeUndefined();
    const expected = {
      title: 'Trip to Lisbon',
      metadata: { lang: 'pt', tags: ['travel'] },
      revision: 2,
      messageCount: 1,
    };
    expect(answer.data.updateSession).toEqual({ id: 'titled', ...expected });
    expect(await read('titled')).toEqual({ ...expected, messages: { totalCount: 1 } });
  });

  it('changes only what is given, and null clears', async () => {
    await started('partial');
    await update({ id: 'partial', title: 'kept', metadata: { a: 1 } });

    expect((await update({ id: 'partial', metadata: null })).data.updateSession).toMatchObject({
      title: 'kept',
      metadata: null,
      revision: 3,
    });
    expect((await update({ id: 'partial', title: null })).data.updateSession).toMatchObject({
      title: null,
      metadata: null,
      revision: 4,
    });
  });

  it('refuses a stale expectedRevision with REVISION_CONFLICT, naming the current one, and changes nothing', async () => {
    await started('contended');
    await update({ id: 'contended', expectedRevision: 1, title: 'first editor' });

    const late = await update({ id: 'contended', expectedRevision: 1, title: 'second editor' });

    expect(late.data?.updateSession ?? null).toBeNull();
    expect(late.errors?.[0]?.extensions?.code).toBe('REVISION_CONFLICT');
    expect(late.errors?.[0]?.message).toMatch(/at revision 2, not 1/);
    expect(await read('contended')).toMatchObject({ title: 'first editor', revision: 2 });
  });

  it('lets exactly one of several editors racing the same revision win', async () => {
    await started('raced');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        update({ id: 'raced', expectedRevision: 1, title: `editor ${n}` }),
      ),
    );

    const winners = answers.filter((answer) => answer.errors === undefined);
    expect(winners).toHaveLength(1);
    expect(
      answers.filter((answer) => answer.errors?.[0]?.extensions?.code === 'REVISION_CONFLICT'),
    ).toHaveLength(7);
    expect(await read('raced')).toMatchObject({
      title: winners[0].data.updateSession.title,
      revision: 2,
    });
  });

  it('answers NOT_FOUND for a session that does not exist, and creates none', async () => {
    const answer = await update({ id: 'nobody', title: 'x' });

    expect(answer.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(await read('nobody')).toBeNull();
  });

  it.each([
    ['an empty title', { title: '' }, /input\.title: must be 1 to 512 characters/],
    ['a title of 513 characters', { title: 'x'.repeat(513) }, /input\.title/],
    ['NUL in the title', { title: 'a\u0000' }, /input\.title: must not contain the NUL/],
    ['a lone surrogate in the title', { title: '\uD83D' }, /input\.title: must be valid Unicode/],
    [
      'metadata nested too deep',
      { metadata: JSON.parse('['.repeat(22) + ']'.repeat(22)) },
      /input\.metadata/,
    ],
    [
      'metadata past MAX_MESSAGE_BYTES',
      { metadata: { text: 'x'.repeat(3000) } },
      /input\.metadata: is more than 2048 bytes/,
    ],
    ['no change at all', {}, /input: must change title, metadata or both/],
    ['a bad session id', { id: 'a b', title: 'x' }, /input\.id/],
  ])('refuses %s with BAD_USER_INPUT and changes nothing', async (_, change, message) => {
    await started('guarded');
    const before = await read('guarded');

    const answer = await update({ id: 'guarded', ...change });

    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(answer.errors?.[0]?.message).toMatch(message);
    expect(await read('guarded')).toEqual(before);
  });

  it('needs the append scope: a read-only token is FORBIDDEN', async () => {
    await started('scoped');

    const answer = await update({ id: 'scoped', title: 'x' }, 'ro');

    expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await read('scoped')).title).toBeNull();
  });
});
