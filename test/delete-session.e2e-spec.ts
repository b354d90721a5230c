import { LiveChannels } from '../src/live/live-channels.js';
import { databaseKinds } from './support/databases.js';
import { appendMessage, faultSuite, metricValue, readJournal } from './support/fault-helpers.js';
import { errorCodes, eventually, liveClient, subscribe } from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const DELETE = `mutation($id: ID!) {
  deleteSession(id: $id) { id deleted storedMessages heldMessages }
}`;
const READ = `query($id: ID!) {
  session(id: $id) { messageCount messages(first: 100) { edges { node { content status } } } }
}`;
const LIVE = `subscription($s: ID!) { messageAppended(sessionId: $s) { node { content } } }`;
const UPDATED = `subscription($s: ID!) { sessionUpdated(id: $s) { title } }`;

const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe.each(databaseKinds())('deleteSession on %s', (database) => {
  let sut: TestApp;
  let url: string;

  beforeAll(async () => {
    sut = await createTestApp(database, { API_TOKENS: 'rw=read+append', ADMIN_TOKEN: 'root' });
    await sut.app.listen(0, '127.0.0.1');
    url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
  });

  afterAll(() => sut.close());

  async function append(sessionId: string, content: string): Promise<void> {
    const answer = await sut.gql(APPEND, { input: { sessionId, role: 'USER', content } }, as('rw'));
    expect(answer.data?.appendMessage?.status).toBe('PERSISTED');
  }

  it('removes the messages and the session, ends its subscriptions with SESSION_DELETED, and leaves others alone', async () => {
    for (const content of ['a', 'b', 'c']) await append('doomed', content);
    await append('bystander', 'stays');
    // A full read caches the transcript: the deletion must not leave it readable from there.
    expect((await sut.gql(READ, { id: 'doomed' }, as('rw'))).data.session.messageCount).toBe(3);
    const client = liveClient(url, { authorization: 'Bearer rw' });
    const live = subscribe(client, LIVE, { s: 'doomed' }, 'messageAppended');
    const updates = subscribe(client, UPDATED, { s: 'doomed' }, 'sessionUpdated');
    const other = subscribe(client, LIVE, { s: 'bystander' }, 'messageAppended');
    const channels = sut.app.get(LiveChannels);
    await eventually(() => channels.openCount === 3);

    const answer = await sut.gql(DELETE, { id: 'doomed' }, as('root'));

    expect(answer.errors).toBeUndefined();
    expect(answer.data.deleteSession).toEqual({
      id: 'doomed',
      deleted: true,
      storedMessages: 3,
      heldMessages: 0,
    });
    expect((await sut.gql(READ, { id: 'doomed' }, as('rw'))).data.session).toBeNull();
    const listed = await sut.gql('{ sessions { edges { node { id } } } }', {}, as('rw'));
    expect(listed.data.sessions.edges.map((edge: any) => edge.node.id)).toEqual(['bystander']);
    await live.ended;
    await updates.ended;
    expect(errorCodes(live.error)).toEqual(['SESSION_DELETED']);
    expect(errorCodes(updates.error)).toEqual(['SESSION_DELETED']);
    expect(channels.openCount).toBe(1);
    await append('bystander', 'still followed');
    expect((await other.received(1))[0].node.content).toBe('still followed');
    await client.dispose();

    // The id may be used again: a message accepted after the deletion starts a new session.
    await append('doomed', 'afresh');
    const again = await sut.gql(READ, { id: 'doomed' }, as('rw'));
    expect(again.data.session.messages.edges.map((edge: any) => edge.node.content)).toEqual([
      'afresh',
    ]);
  });

  it('answers deleted: false for a session that does not exist', async () => {
    const answer = await sut.gql(DELETE, { id: 'never-was' }, as('root'));
    expect(answer.data.deleteSession).toEqual({
      id: 'never-was',
      deleted: false,
      storedMessages: 0,
      heldMessages: 0,
    });
  });

  it('is for admins only, and refuses a malformed id; neither changes anything', async () => {
    await append('guarded', 'kept');
    const forbidden = await sut.gql(DELETE, { id: 'guarded' }, as('rw'));
    expect(forbidden.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    const anonymous = await sut.gql(DELETE, { id: 'guarded' });
    expect(anonymous.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
    for (const id of ['has space', 'a\u0000b', '\ud800', 'x'.repeat(129)]) {
      const refused = await sut.gql(DELETE, { id }, as('root'));
      expect({ id, code: refused.errors?.[0].extensions?.code }).toEqual({
        id,
        code: 'BAD_USER_INPUT',
      });
    }
    expect((await sut.gql(READ, { id: 'guarded' }, as('rw'))).data.session.messageCount).toBe(1);
  });
});

// Held messages, under a real fault: the SQLite write lock held by another process makes
// appends QUEUED (journaled); the deletion drops them, and a crash after it does not bring the
// session back from the journal.
describe('deleteSession of a session with journaled messages (real process, SQLite)', () => {
  const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(45_000, {
    ADMIN_TOKEN: 'root',
    // No background retry: what is held stays held until the test moves.
    DB_RETRY_INTERVAL_MS: '0',
  });

  faultTest(
    'drops what the instance holds and the journal keeps, and a kill -9 and restart bring none of it back',
    async () => {
      const dataDir = await dataDirectory();
      const first = await server({ DATA_DIR: dataDir });
      expect((await appendMessage(first, 'gone', 'stored')).status).toBe('PERSISTED');
      const holder = await lockDatabase(dataDir);
      for (const content of ['held-1', 'held-2', 'held-3']) {
        expect((await appendMessage(first, 'gone', content)).status).toBe('QUEUED');
      }
      expect((await appendMessage(first, 'keep', 'kept-1')).status).toBe('QUEUED');
      await holder.release();

      const answer = await first.gql(DELETE, { id: 'gone' }, as('root'));
      expect(answer.data.deleteSession).toEqual({
        id: 'gone',
        deleted: true,
        storedMessages: 1,
        heldMessages: 3,
      });
      // The journal still holds the segment (keep's message is owed), lines and all.
      const journal = await readJournal(`${dataDir}/pending_messages`);
      expect(journal.map((line) => line.content)).toEqual(['held-1', 'held-2', 'held-3', 'kept-1']);
      // Dropped by the deletion itself, which says so: not a write-back's drop.
      const DROPPED = 'scribe_messages_dropped_by_deletion_total';
      expect(metricValue((await first.get('/metrics')).text, DROPPED)).toBe(0);
      expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

      const second = await server({ DATA_DIR: dataDir });
      await second.waitForOutput(/Boot replay stored|Boot replay left/);
      expect((await second.gql(READ, { id: 'gone' })).data.session).toBeNull();
      // The journal replayed after the crash still held them: the write-back drops them, not
      // silently.
      expect(metricValue((await second.get('/metrics')).text, DROPPED)).toBe(3);
      expect(second.output()).toMatch(
        /WARN \[SessionEraser\] Dropped 3 accepted message\(s\) of session gone at write-back: accepted at or before its deletion at \S+ \(the newest at \S+\), they are not stored/,
      );
      const kept = await second.gql(READ, { id: 'keep' });
      expect(kept.data.session.messages.edges).toEqual([
        { node: { content: 'kept-1', status: 'PERSISTED' } },
      ]);
    },
  );
});
