import { JwtService } from '@nestjs/jwt';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { type Client } from 'graphql-ws';
import { LiveChannels } from '../src/live/live-channels.js';
import { databaseKinds } from './support/databases.js';
import { eventually, liveClient, subscribe } from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// editMessage and redactMessage: a stored message changed in place, its revision and the
// session's moved on, every read (page, search, export, subscription) telling the change.
const SECRET = 'changes-suite-secret-of-32-bytes';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) => ({
  authorization: `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`,
});
const ADMIN = { authorization: 'Bearer ops' };
const RW = { authorization: 'Bearer rw' };
const RO = { authorization: 'Bearer ro' };
const U1 = bearer({ sub: 'u1', scope: 'read append', session_prefix: 'u1-' });

const FIELDS = `id sessionId revision editedAt redacted redactionReason content metadata toolCalls role createdAt`;
const APPEND = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { ${FIELDS} } }
}`;
const EDIT = `mutation($input: EditMessageInput!) { editMessage(input: $input) { ${FIELDS} } }`;
const REDACT = `mutation($input: RedactMessageInput!) { redactMessage(input: $input) { ${FIELDS} } }`;
const READ = `query($id: ID!) {
  session(id: $id) { revision messageCount messages(first: 100) { edges { cursor node { ${FIELDS} } } } }
}`;
const SEARCH = `query($q: String!, $s: ID) {
  searchMessages(query: $q, sessionId: $s) { edges { node { message { id content } } } }
}`;
const EVENTS = `subscription($s: ID!, $after: String) {
  messageEvents(sessionId: $s, after: $after) { kind cursor node { id content revision redacted } }
}`;
const APPENDED = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { id content } }
}`;

/** Orders message cursors by the commit number they carry (`<key>#<number>`). */
const byCommitNumber = (x: string, y: string) => commitNumberOf(x) - commitNumberOf(y);
const commitNumberOf = (cursor: string) =>
  Number(/#(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString())?.[1] ?? NaN);

/** The SQLite files (database, log) under `dir` whose bytes hold `text`. */
async function sqliteFilesHolding(dir: string, text: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((name) => name.startsWith('scribe.sqlite'));
  const holding: string[] = [];
  for (const name of names) {
    if ((await readFile(join(dir, name))).includes(Buffer.from(text))) holding.push(name);
  }
  return holding;
}

/** Another process's reader of the file, holding a read snapshot until closed. */
async function openReader(file: string): Promise<{ close: () => Promise<void> }> {
  const db = new sqlite3.Database(file, sqlite3.OPEN_READONLY);
  const all = (sql: string) =>
    new Promise<void>((done, fail) => db.all(sql, (error) => (error ? fail(error) : done())));
  await all('BEGIN');
  await all('SELECT count(*) FROM messages');
  return {
    close: async () => {
      await all('COMMIT');
      await new Promise<void>((done) => db.close(() => done()));
    },
  };
}

async function eventuallyTrue(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const manyKeys = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, n) => [`k${n}`, n]));

interface Event {
  kind: string;
  cursor: string;
  node: { id: string; content: string; revision: number; redacted: boolean };
}

describe.each(databaseKinds())('editMessage and redactMessage on %s', (database) => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;
  const clients: Client[] = [];

  beforeAll(async () => {
    sut = await createTestApp(database, {
      API_TOKENS: 'ops=admin,rw=read+append,ro=read,ao=append',
      JWT_SECRET: SECRET,
      MAX_MESSAGE_BYTES: String(64 * 1024),
    });
    await sut.app.listen(0, '127.0.0.1');
    url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
    channels = sut.app.get(LiveChannels);
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    await eventually(() => channels.openCount === 0);
  });

  afterAll(() => sut.close());

  const live = () => {
    const client = liveClient(url, { authorization: 'Bearer ro' });
    clients.push(client);
    return client;
  };

  async function append(
    sessionId: string,
    content: string,
    extra: Record<string, unknown> = {},
  ): Promise<Record<string, any>> {
    const answer = await sut.gql(
      APPEND,
      { input: { sessionId, role: 'USER', content, ...extra } },
      RW,
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data.appendMessage.status).toBe('PERSISTED');
    return answer.data.appendMessage.message;
  }
  const edit = (input: Record<string, unknown>, headers = RW) => sut.gql(EDIT, { input }, headers);
  const redact = (input: Record<string, unknown>, headers = ADMIN) =>
    sut.gql(REDACT, { input }, headers);
  const read = async (id: string) => (await sut.gql(READ, { id }, RO)).data.session;
  const found = async (query: string, sessionId: string) =>
    (await sut.gql(SEARCH, { q: query, s: sessionId }, RO)).data.searchMessages.edges.map(
      (edge: any) => edge.node.message.id,
    );

  describe('editMessage', () => {
    it('changes the content in place: same id and place, its own revision and editedAt, the session revision on by one', async () => {
      const first = await append('e-place', 'first');
      const second = await append('e-place', 'the orignal spelling', { metadata: { a: 1 } });
      await append('e-place', 'third');
      const before = await read('e-place');

      const answer = await edit({
        sessionId: 'e-place',
        id: second.id,
        content: 'the original spelling',
        expectedRevision: 1,
      });

      expect(answer.errors).toBeUndefined();
      const edited = answer.data.editMessage;
      expect(edited).toMatchObject({
        id: second.id,
        content: 'the original spelling',
        metadata: { a: 1 },
        revision: 2,
        redacted: false,
        createdAt: second.createdAt,
      });
      expect(Date.parse(edited.editedAt)).toBeGreaterThanOrEqual(Date.parse(second.createdAt));
      const after = await read('e-place');
      expect(after.revision).toBe(before.revision + 1);
      expect(after.messageCount).toBe(3);
      expect(after.messages.edges.map((edge: any) => edge.node.id)).toEqual(
        before.messages.edges.map((edge: any) => edge.node.id),
      );
      expect(after.messages.edges[1].node).toEqual(edited);
      expect(after.messages.edges[1].cursor).toBe(before.messages.edges[1].cursor);
      expect(after.messages.edges[0].node).toMatchObject({ id: first.id, revision: 1 });
      expect(after.messages.edges[0].node.editedAt).toBeNull();
    });

    it('changes only what is given: metadata alone, and null clears it', async () => {
      const message = await append('e-partial', 'kept text', { metadata: { old: true } });

      const metadata = await edit({ sessionId: 'e-partial', id: message.id, metadata: { n: 2 } });
      const cleared = await edit({ sessionId: 'e-partial', id: message.id, metadata: null });

      expect(metadata.data.editMessage).toMatchObject({
        content: 'kept text',
        metadata: { n: 2 },
        revision: 2,
      });
      expect(cleared.data.editMessage).toMatchObject({
        content: 'kept text',
        metadata: null,
        revision: 3,
      });
    });

    it('keeps search true: the new words are found and the old ones are not', async () => {
      const message = await append('e-search', 'zebracorn galloping');

      await edit({ sessionId: 'e-search', id: message.id, content: 'unicornfish swimming' });

      expect(await found('zebracorn', 'e-search')).toEqual([]);
      expect(await found('unicornfish', 'e-search')).toEqual([message.id]);
    });

    it('refuses a stale expectedRevision with REVISION_CONFLICT naming the current one, and changes nothing', async () => {
      const message = await append('e-stale', 'v1');
      await edit({ sessionId: 'e-stale', id: message.id, content: 'v2', expectedRevision: 1 });
      const revision = (await read('e-stale')).revision;

      const late = await edit({
        sessionId: 'e-stale',
        id: message.id,
        content: 'v2 from a stale editor',
        expectedRevision: 1,
      });

      expect(late.data?.editMessage ?? null).toBeNull();
      expect(late.errors?.[0]?.extensions?.code).toBe('REVISION_CONFLICT');
      expect(late.errors?.[0]?.message).toMatch(/at revision 2, not 1/);
      const after = await read('e-stale');
      expect(after.revision).toBe(revision);
      expect(after.messages.edges[0].node).toMatchObject({ content: 'v2', revision: 2 });
    });

    it('lets exactly one of several editors racing the same revision win, and moves the session revision once', async () => {
      const message = await append('e-race', 'v1');
      const revision = (await read('e-race')).revision;

      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, n) =>
          edit({
            sessionId: 'e-race',
            id: message.id,
            content: `editor ${n}`,
            expectedRevision: 1,
          }),
        ),
      );

      const winners = answers.filter((answer) => answer.errors === undefined);
      expect(winners).toHaveLength(1);
      expect(
        answers.filter((answer) => answer.errors?.[0]?.extensions?.code === 'REVISION_CONFLICT'),
      ).toHaveLength(7);
      const after = await read('e-race');
      expect(after.revision).toBe(revision + 1);
      expect(after.messages.edges[0].node.content).toBe(winners[0].data.editMessage.content);
    });

    it('answers NOT_FOUND for no such message, and for a message of another session, changing nothing', async () => {
      const mine = await append('e-mine', 'mine');
      await append('e-other', 'other');
      const revision = (await read('e-other')).revision;

      const unknown = await edit({
        sessionId: 'e-mine',
        id: '00000000-0000-4000-8000-000000000000',
        content: 'x',
      });
      const elsewhere = await edit({ sessionId: 'e-other', id: mine.id, content: 'hijacked' });

      expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect(elsewhere.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect((await read('e-mine')).messages.edges[0].node.content).toBe('mine');
      expect((await read('e-other')).revision).toBe(revision);
    });

    it.each([
      ['a session id that is none', { sessionId: 'a b' }, /input\.sessionId/],
      ['an id that is no UUID', { id: 'not-a-uuid' }, /input\.id: must be a message id/],
      ['NUL in the content', { content: 'a\u0000b' }, /input\.content: must not contain the NUL/],
      ['a lone surrogate', { content: 'a\ud800b' }, /input\.content: must be valid Unicode/],
      ['null content', { content: null }, /input\.content: cannot be null/],
      ['no change at all', { content: undefined }, /input: must change content, metadata or both/],
      ['content past MAX_MESSAGE_BYTES', { content: 'x'.repeat(65537) }, /65537 bytes/],
      [
        'metadata nested too deep',
        { metadata: JSON.parse('['.repeat(25) + ']'.repeat(25)) as unknown },
        /input\.metadata/,
      ],
      [
        'a document nested too deep for the body',
        { metadata: JSON.parse('['.repeat(200) + ']'.repeat(200)) as unknown },
        /nested more than/,
      ],
      [
        'metadata of 1,200 keys in all',
        { metadata: Array.from({ length: 20 }, () => manyKeys(60)) },
        /input\.metadata/,
      ],
      ['an expectedRevision of 0', { expectedRevision: 0 }, /input\.expectedRevision/],
    ])('refuses %s with BAD_USER_INPUT, changing nothing', async (_name, change, message) => {
      const stored = await append('e-bad', 'untouched');
      const revision = (await read('e-bad')).revision;

      const answer = await edit({
        sessionId: 'e-bad',
        id: stored.id,
        content: 'changed',
        ...change,
      });

      // (Too deep a document is refused by the body's parser, with 400, before GraphQL.)
      expect(answer.status).toBeLessThan(500);
      expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(answer.errors?.[0]?.message).toMatch(message);
      expect(JSON.stringify(answer.body)).not.toMatch(/stack|\.ts:/);
      expect((await read('e-bad')).revision).toBe(revision);
    });

    it('needs append on the session: read-only and other-prefix tokens are refused', async () => {
      const message = await append('u2-private', 'not yours');

      const readOnly = await edit({ sessionId: 'u2-private', id: message.id, content: 'x' }, RO);
      const otherPrefix = await edit({ sessionId: 'u2-private', id: message.id, content: 'x' }, U1);

      expect(readOnly.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect(otherPrefix.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await read('u2-private')).messages.edges[0].node).toMatchObject({
        content: 'not yours',
        revision: 1,
      });
    });

    it('lets an append-only token edit and learn only whether it did: content and revision need read', async () => {
      const message = await append('e-blind', 'seen by readers');
      const AO = { authorization: 'Bearer ao' };

      const blind = await sut.gql(
        `mutation($input: EditMessageInput!) { editMessage(input: $input) { id sessionId status } }`,
        { input: { sessionId: 'e-blind', id: message.id, content: 'changed blind' } },
        AO,
      );
      const peeking = await edit(
        { sessionId: 'e-blind', id: message.id, content: 'changed while peeking' },
        AO,
      );

      expect(blind.errors).toBeUndefined();
      expect(blind.data.editMessage).toEqual({
        id: message.id,
        sessionId: 'e-blind',
        status: 'PERSISTED',
      });
      expect(peeking.status).toBe(403);
      expect(peeking.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await read('e-blind')).messages.edges[0].node).toMatchObject({
        content: 'changed blind',
        revision: 2,
      });
    });

    it('answers an idempotent retry of an edited message with its current state, not a conflict', async () => {
      const first = await append('e-retry', 'draft', { clientMessageId: 'c-1' });
      await edit({ sessionId: 'e-retry', id: first.id, content: 'final' });

      const retry = await sut.gql(
        APPEND,
        { input: { sessionId: 'e-retry', role: 'USER', content: 'draft', clientMessageId: 'c-1' } },
        RW,
      );
      const otherRole = await sut.gql(
        APPEND,
        {
          input: {
            sessionId: 'e-retry',
            role: 'ASSISTANT',
            content: 'draft',
            clientMessageId: 'c-1',
          },
        },
        RW,
      );

      expect(retry.errors).toBeUndefined();
      expect(retry.data.appendMessage).toMatchObject({
        status: 'PERSISTED',
        message: { id: first.id, content: 'final', revision: 2 },
      });
      expect(otherRole.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_CONFLICT');
      expect((await read('e-retry')).messageCount).toBe(1);
    });
  });

  describe('redactMessage', () => {
    it('leaves a tombstone in place: no content, metadata nor tool calls; role, times and the reason kept', async () => {
      await append('r-place', 'before');
      const secret = await append('r-place', 'my card is 4111 1111 1111 1111', {
        metadata: { card: '4111' },
        toolCalls: [{ name: 'pay', args: { card: '4111' } }],
      });
      await append('r-place', 'after');
      const revision = (await read('r-place')).revision;

      const answer = await redact({
        sessionId: 'r-place',
        id: secret.id,
        reason: 'GDPR request 17',
      });

      expect(answer.errors).toBeUndefined();
      const tombstone = {
        id: secret.id,
        role: 'USER',
        content: '',
        metadata: null,
        toolCalls: null,
        redacted: true,
        redactionReason: 'GDPR request 17',
        revision: 2,
        createdAt: secret.createdAt,
      };
      expect(answer.data.redactMessage).toMatchObject(tombstone);
      const after = await read('r-place');
      expect(after.revision).toBe(revision + 1);
      expect(after.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'before',
        '',
        'after',
      ]);
      expect(after.messages.edges[1].node).toMatchObject(tombstone);
      expect(await found('4111', 'r-place')).toEqual([]);
    });

    it('exports the tombstone, never the content', async () => {
      const secret = await append('r-export', 'exported secret word plumbago');
      await redact({ sessionId: 'r-export', id: secret.id, reason: 'legal' });

      const exported = await sut.http().get('/sessions/r-export/export?format=jsonl').set(RO);

      expect(exported.status).toBe(200);
      expect(exported.text).not.toContain('plumbago');
      const line = JSON.parse(exported.text.split('\n')[1]);
      expect(line.message).toMatchObject({ id: secret.id, content: '', redacted: true });
    });

    it('needs admin: an append token is refused and nothing changes', async () => {
      const message = await append('r-admin', 'stays');

      const answer = await redact({ sessionId: 'r-admin', id: message.id, reason: 'x' }, RW);

      expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect((await read('r-admin')).messages.edges[0].node.content).toBe('stays');
    });

    it('answers a second redaction with the same tombstone and moves nothing; an edit of it is MESSAGE_REDACTED', async () => {
      const message = await append('r-twice', 'gone soon');
      const first = await redact({ sessionId: 'r-twice', id: message.id, reason: 'one' });
      const revision = (await read('r-twice')).revision;

      const again = await redact({ sessionId: 'r-twice', id: message.id, reason: 'two' });
      const edited = await edit({ sessionId: 'r-twice', id: message.id, content: 'back' });

      expect(again.data.redactMessage).toEqual(first.data.redactMessage);
      expect(edited.errors?.[0]?.extensions?.code).toBe('MESSAGE_REDACTED');
      expect((await read('r-twice')).revision).toBe(revision);
    });

    it('refuses an empty or oversized reason with BAD_USER_INPUT', async () => {
      const message = await append('r-reason', 'kept');

      for (const reason of ['', 'x'.repeat(513), 'a\u0000']) {
        const answer = await redact({ sessionId: 'r-reason', id: message.id, reason });
        expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
        expect(answer.errors?.[0]?.message).toMatch(/input\.reason/);
      }
      expect((await read('r-reason')).messages.edges[0].node.content).toBe('kept');
    });
  });

  describe('messageEvents', () => {
    it('tells appends, edits and redactions in commit order; messageAppended tells only the appends', async () => {
      const events = subscribe<Event>(live(), EVENTS, { s: 'l-order' }, 'messageEvents');
      const appends = subscribe<any>(live(), APPENDED, { s: 'l-order' }, 'messageAppended');
      await eventually(() => channels.openCount === 2);

      const a = await append('l-order', 'a');
      await edit({ sessionId: 'l-order', id: a.id, content: 'a, edited' });
      const b = await append('l-order', 'b');
      await redact({ sessionId: 'l-order', id: a.id, reason: 'r' });
      const c = await append('l-order', 'c');

      const seen = await events.received(5);
      expect(seen.map((event) => [event.kind, event.node.id])).toEqual([
        ['APPENDED', a.id],
        ['EDITED', a.id],
        ['APPENDED', b.id],
        ['REDACTED', a.id],
        ['APPENDED', c.id],
      ]);
      // A message shows as the event found it: on PostgreSQL, read after its notice came, an
      // append may show an edit committed since. Never an older state after a newer one.
      expect(seen[1].node).toMatchObject({ content: 'a, edited', revision: 2 });
      expect(seen[3].node).toMatchObject({ content: '', revision: 3, redacted: true });
      expect(seen[0].node.revision).toBeLessThanOrEqual(seen[1].node.revision);
      expect(seen.map((event) => event.cursor)).toEqual(
        [...seen.map((event) => event.cursor)].sort(byCommitNumber),
      );
      const plain = await appends.received(3);
      expect(plain.map((edge) => edge.node.id)).toEqual([a.id, b.id, c.id]);
      expect(appends.events).toHaveLength(3);
    });

    it('resumed after a cursor, replays the edits missed, each message once at its last change, then goes live', async () => {
      const a = await append('l-resume', 'a');
      const b = await append('l-resume', 'b');
      const first = subscribe<Event>(live(), EVENTS, { s: 'l-resume' }, 'messageEvents');
      await eventually(() => channels.openCount === 1);
      await edit({ sessionId: 'l-resume', id: a.id, content: 'a1' });
      const [seen] = await first.received(1);
      first.stop();
      await eventually(() => channels.openCount === 0);

      // Missed while away: b edited twice, a redacted, c appended.
      await edit({ sessionId: 'l-resume', id: b.id, content: 'b1' });
      await edit({ sessionId: 'l-resume', id: b.id, content: 'b2' });
      await redact({ sessionId: 'l-resume', id: a.id, reason: 'r' });
      const c = await append('l-resume', 'c');

      const resumed = subscribe<Event>(
        live(),
        EVENTS,
        { s: 'l-resume', after: seen.cursor },
        'messageEvents',
      );
      const replayed = await resumed.received(3);
      await edit({ sessionId: 'l-resume', id: c.id, content: 'c1' });
      const all = await resumed.received(4);

      expect(replayed.map((event) => [event.kind, event.node.id, event.node.content])).toEqual([
        ['EDITED', b.id, 'b2'],
        ['REDACTED', a.id, ''],
        ['APPENDED', c.id, 'c'],
      ]);
      expect(all[3]).toMatchObject({ kind: 'EDITED', node: { id: c.id, content: 'c1' } });
    });

    it("resumed after a page's cursor, replays the messages after it, then the changes made since to the page's own", async () => {
      const a = await append('l-page', 'a');
      const b = await append('l-page', 'b');
      const page = (await read('l-page')).messages.edges;
      const cursor = page[page.length - 1].cursor;
      // After the page was read: a (in the page) edited, c appended, b (in the page) redacted.
      await edit({ sessionId: 'l-page', id: a.id, content: 'a1' });
      const c = await append('l-page', 'c');
      await redact({ sessionId: 'l-page', id: b.id, reason: 'r' });

      const resumed = subscribe<Event>(
        live(),
        EVENTS,
        { s: 'l-page', after: cursor },
        'messageEvents',
      );
      const replayed = await resumed.received(3);
      await edit({ sessionId: 'l-page', id: a.id, content: 'a2' });
      const all = await resumed.received(4);

      expect(replayed.map((event) => [event.kind, event.node.id, event.node.content])).toEqual([
        ['APPENDED', c.id, 'c'],
        ['EDITED', a.id, 'a1'],
        ['REDACTED', b.id, ''],
      ]);
      expect(all[3]).toMatchObject({ kind: 'EDITED', node: { id: a.id, content: 'a2' } });
      expect(resumed.events).toHaveLength(4);
    });

    it('an edit racing a resume shows no gap and no duplicate', async () => {
      const message = await append('l-race', 'v0');
      const start = subscribe<Event>(live(), EVENTS, { s: 'l-race' }, 'messageEvents');
      await eventually(() => channels.openCount === 1);
      await edit({ sessionId: 'l-race', id: message.id, content: 'v1' });
      const [anchor] = await start.received(1);
      start.stop();
      await eventually(() => channels.openCount === 0);

      // Edits go on while the resumed subscription replays and goes live: each later revision
      // must arrive, in order, none twice, whichever side of the seam it fell on.
      const resumed = subscribe<Event>(
        live(),
        EVENTS,
        { s: 'l-race', after: anchor.cursor },
        'messageEvents',
      );
      for (let revision = 3; revision <= 30; revision++) {
        const answer = await edit({
          sessionId: 'l-race',
          id: message.id,
          content: `v${revision - 1}`,
          expectedRevision: revision - 1,
        });
        expect(answer.errors).toBeUndefined();
      }
      await eventually(() => resumed.events.at(-1)?.node.revision === 30);

      const revisions = resumed.events.map((event) => event.node.revision);
      // Replayed edits collapse into the last state read; live ones come one by one.
      expect(revisions).toEqual([...revisions].sort((x, y) => x - y));
      expect(new Set(revisions).size).toBe(revisions.length);
      expect(revisions.at(-1)).toBe(30);
      const cursors = resumed.events.map((event) => event.cursor);
      expect(new Set(cursors).size).toBe(cursors.length);
    });
  });

  describe('what attacks found', () => {
    it('refuses an edit that would leave the message past MAX_MESSAGE_BYTES with what it keeps', async () => {
      const message = await append('a-size', 'short', {
        toolCalls: [{ name: 'bulk', args: { text: 'x'.repeat(40_000) } }],
      });

      const answer = await edit({
        sessionId: 'a-size',
        id: message.id,
        content: 'y'.repeat(30_000),
      });

      expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(answer.errors?.[0]?.message).toMatch(/would hold \d+ bytes .*the limit is 65536/);
      expect((await read('a-size')).messages.edges[0].node).toMatchObject({
        content: 'short',
        revision: 1,
      });
    });

    it('tells an append-only token only that its edit was not made, not the revision nor why', async () => {
      const message = await append('a-blind', 'v1');
      await edit({ sessionId: 'a-blind', id: message.id, content: 'v2' });
      const AO = { authorization: 'Bearer ao' };
      const blindly = (input: Record<string, unknown>) =>
        sut.gql(
          `mutation($input: EditMessageInput!) { editMessage(input: $input) { id } }`,
          { input: { sessionId: 'a-blind', ...input } },
          AO,
        );

      const stale = await blindly({ id: message.id, content: 'x', expectedRevision: 1 });
      await redact({ sessionId: 'a-blind', id: message.id, reason: 'r' });
      const redacted = await blindly({ id: message.id, content: 'x' });
      const missing = await blindly({ id: '00000000-0000-4000-8000-000000000000', content: 'x' });

      const said = [stale, redacted, missing].map((answer) => ({
        code: answer.errors?.[0]?.extensions?.code,
        message: answer.errors?.[0]?.message.replace(/message [0-9a-f-]{36}/, 'message <id>'),
      }));
      expect(new Set(said.map((each) => JSON.stringify(each))).size).toBe(1);
      expect(said[0].code).toBe('NOT_FOUND');
      expect(said[0].message).not.toMatch(/revision 2|redacted/);
    });

    it("refuses a live cursor past the session's last commit with BAD_USER_INPUT", async () => {
      await append('a-future', 'one');
      const [edge] = (await read('a-future')).messages.edges;
      const key = Buffer.from(edge.cursor, 'base64url')
        .toString()
        .replace(/[#!].*$/, '');
      const forged = Buffer.from(`${key}#999999999999`).toString('base64url');

      const events = subscribe<Event>(
        live(),
        EVENTS,
        { s: 'a-future', after: forged },
        'messageEvents',
      );
      await events.ended;

      expect(JSON.stringify(events.error)).toMatch(/BAD_USER_INPUT/);
      expect(JSON.stringify(events.error)).toMatch(/past the session's last commit/);
    });

    it('marks edited and redacted messages in the Markdown export', async () => {
      const kept = await append('a-markdown', 'first words');
      const gone = await append('a-markdown', 'second words');
      await edit({ sessionId: 'a-markdown', id: kept.id, content: 'first words, edited' });
      await redact({ sessionId: 'a-markdown', id: gone.id, reason: 'asked\nto forget' });

      const exported = await sut.http().get('/sessions/a-markdown/export?format=markdown').set(RO);

      expect(exported.text).toMatch(/_Edited \S+Z_\n\nfirst words, edited/);
      expect(exported.text).toMatch(/_Redacted \S+Z: asked to forget_/);
      expect(exported.text).not.toContain('second words');
    });

    it('answers every edit, redaction and deletion racing appends truly: none DATABASE_UNAVAILABLE', async () => {
      const sessions = ['a-race-1', 'a-race-2', 'a-race-3'];
      const targets = await Promise.all(sessions.map((id) => append(id, 'v1')));
      const work = sessions.flatMap((sessionId, index) => [
        ...Array.from({ length: 15 }, (_, n) => append(sessionId, `burst ${n}`).then(() => 'ok')),
        ...Array.from({ length: 10 }, (_, n) =>
          edit({
            sessionId,
            id: targets[index].id,
            content: `edit ${n}`,
            expectedRevision: 1 + (n % 3),
          }).then((answer) => answer.errors?.[0]?.extensions?.code ?? 'ok'),
        ),
        redact({ sessionId, id: targets[index].id, reason: 'r' }).then(
          (answer) => answer.errors?.[0]?.extensions?.code ?? 'ok',
        ),
      ]);
      work.push(
        sut
          .gql(
            'mutation($id: ID!) { deleteSession(id: $id) { deleted } }',
            { id: 'a-race-3' },
            ADMIN,
          )
          .then((answer) => answer.errors?.[0]?.extensions?.code ?? 'ok'),
      );

      const codes = await Promise.all(work);

      expect(
        codes.filter(
          (code) => !['ok', 'REVISION_CONFLICT', 'NOT_FOUND', 'MESSAGE_REDACTED'].includes(code),
        ),
      ).toEqual([]);
    });

    it('deletes sessions while their messages are edited: every deletion made, no deadlock', async () => {
      // Four edits a session: each deletion waits behind its session's edits for the row lock, and
      // on a loaded machine ten passed the pool's 5 s query timeout (a finding kept open).
      const sessions = Array.from({ length: 12 }, (_, n) => `a-delete-${n}`);
      const targets = await Promise.all(sessions.map((id) => append(id, 'v1')));
      const edits = sessions.flatMap((sessionId, index) =>
        Array.from({ length: 4 }, (_, n) =>
          edit({ sessionId, id: targets[index].id, content: `edit ${n}` }).then(
            (answer) => answer.errors?.[0]?.extensions?.code ?? 'ok',
          ),
        ),
      );
      const deletions = sessions.map((id) =>
        sut
          .gql('mutation($id: ID!) { deleteSession(id: $id) { deleted } }', { id }, ADMIN)
          .then((answer) => answer.errors?.[0]?.extensions?.code ?? 'ok'),
      );

      const [editCodes, deleteCodes] = await Promise.all([
        Promise.all(edits),
        Promise.all(deletions),
      ]);

      expect(deleteCodes).toEqual(sessions.map(() => 'ok'));
      expect(editCodes.filter((code) => code !== 'ok' && code !== 'NOT_FOUND')).toEqual([]);
      for (const id of sessions) expect(await read(id)).toBeNull();
    });

    // SQLite's own files (PostgreSQL's are its server's: docs/chat-front-ends.md says what they keep).
    if (database === 'sqlite') {
      it('leaves no byte of an edited then redacted text in the SQLite files, overflow pages included', async () => {
        const text = 'BIGSECRET-'.repeat(1200);
        const message = await append('a-overflow', text);
        await edit({ sessionId: 'a-overflow', id: message.id, content: 'tiny' });
        await redact({ sessionId: 'a-overflow', id: message.id, reason: 'r' });

        expect(await sqliteFilesHolding(sut.dataDir, 'BIGSECRET')).toEqual([]);
      });

      it('empties the write-ahead log of a redacted text once a reader that held it lets go', async () => {
        const message = await append('a-wal', 'WALSECRET pineapple');
        const reader = await openReader(join(sut.dataDir, 'scribe.sqlite'));
        try {
          await redact({ sessionId: 'a-wal', id: message.id, reason: 'r' });
          // The reader's snapshot needs the log: it cannot be emptied yet, and is tried again.
          expect(await sqliteFilesHolding(sut.dataDir, 'WALSECRET')).not.toEqual([]);
        } finally {
          await reader.close();
        }
        await eventuallyTrue(
          async () => (await sqliteFilesHolding(sut.dataDir, 'WALSECRET')).length === 0,
        );
      });
    }
  });
});
