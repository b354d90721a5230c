import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import { appendMessage, faultSuite } from './support/fault-helpers.js';
import { fakeClockEnv } from './support/faketime.js';
import { liveClient, subscribe } from './support/live-client.js';
import { startServer, type ServerProcess } from './support/server-process.js';

// Two real instances share one PostgreSQL schema; one runs an hour behind under libfaketime
// (see clock-jumps.e2e-spec.ts). A client that waits for each PERSISTED answer must read its
// messages back in the order of the answers, whichever instance took each: the write places
// them after what the session holds (stored-order.ts). databaseKinds() says once, on stderr,
// why PostgreSQL is left out.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

const TRANSCRIPT = `query($id: ID!) {
  session(id: $id) { messages(first: 1000) { edges { cursor node { content createdAt status } } } }
}`;
const LIVE = `subscription($s: ID!, $after: String) {
  messageAppended(sessionId: $s, after: $after) { cursor node { content } }
}`;

interface Edge {
  cursor: string;
  node: { content: string; createdAt?: string; status?: string };
}

/** The order key a cursor stands for: a live event's names no commit number. */
const keyOf = (cursor: string) => Buffer.from(cursor, 'base64url').toString('utf8').split('#')[0];

describeOnPostgres('order of answered appends across instances whose clocks differ', () => {
  const { cleanups, faultTest, dataDirectory } = faultSuite(120_000);

  /** An instance on `url` whose wall clock is off by `offset` (`+0`, `-1h`). */
  async function instance(url: string, offset: string): Promise<ServerProcess> {
    const dataDir = await dataDirectory();
    const clockFile = join(dataDir, 'faketime');
    await writeFile(clockFile, `${offset}\n`);
    const started = await startServer(
      {
        DATA_DIR: dataDir,
        DATABASE_URL: url,
        DB_RETRY_INTERVAL_MS: '200',
        ...fakeClockEnv({ file: clockFile }),
      },
      { readyTimeoutMs: 60_000 },
    );
    cleanups.showOnFailure(`instance ${offset} pid ${started.child.pid}`, () => started.output());
    cleanups.add(() => started.stop('SIGKILL'));
    return started;
  }

  /** One instance with the right time and one an hour behind, on a schema of their own. */
  async function instances(): Promise<{ right: ServerProcess; behind: ServerProcess }> {
    const schema = await createPostgresSchema();
    cleanups.add(schema.drop);
    // One after the other: the first migrates the schema.
    const right = await instance(schema.url, '+0');
    const behind = await instance(schema.url, '-1h');
    return { right, behind };
  }

  async function append(target: ServerProcess, sessionId: string, content: string) {
    expect((await appendMessage(target, sessionId, content)).status).toBe('PERSISTED');
  }

  async function transcript(target: ServerProcess, sessionId: string): Promise<Edge[]> {
    const read = await target.gql(TRANSCRIPT, { id: sessionId });
    expect(read.errors).toBeUndefined();
    return read.data.session.messages.edges as Edge[];
  }

  faultTest(
    'forty appends alternating between them read back in the order of their answers, from both',
    async () => {
      const { right, behind } = await instances();
      const sent = Array.from({ length: 40 }, (_, index) => `m${index}`);
      for (const [index, content] of sent.entries()) {
        await append(index % 2 === 0 ? right : behind, 'alternating', content);
      }

      const fromRight = await transcript(right, 'alternating');
      const fromBehind = await transcript(behind, 'alternating');
      expect(fromRight.map((edge) => edge.node.content)).toEqual(sent);
      expect(fromBehind.map((edge) => edge.node.content)).toEqual(sent);
      // The behind instance's clock is behind (libfaketime works): the first message it took
      // was timed an hour back. Its later ones are timed after the keys it was given.
      expect(Date.parse(fromRight[1].node.createdAt as string)).toBeLessThan(
        Date.now() - 50 * 60_000,
      );
      // Both read the keys the messages were stored with.
      expect(fromBehind.map((edge) => edge.cursor)).toEqual(fromRight.map((edge) => edge.cursor));
    },
  );

  faultTest(
    'the behind instance caches and announces its appends with the keys they were stored with',
    async () => {
      const { right, behind } = await instances();
      await append(right, 'cached', 'x0');
      // Cached on the behind instance now: its next writes of the session update that copy.
      const [seed] = await transcript(behind, 'cached');
      const client = liveClient(`${behind.url.replace(/^http/, 'ws')}/graphql`);
      cleanups.add(() => Promise.resolve(client.dispose()));
      const live = subscribe<Edge>(
        client,
        LIVE,
        { s: 'cached', after: seed.cursor },
        'messageAppended',
      );
      cleanups.add(() => Promise.resolve(live.stop()));

      // Two writes in a row from the behind instance: its cached copy takes them as written.
      await append(behind, 'cached', 'y1');
      await append(behind, 'cached', 'y2');
      const cached = await transcript(behind, 'cached');
      await append(right, 'cached', 'x3');
      await append(behind, 'cached', 'y4');

      const stored = await transcript(right, 'cached');
      expect(stored.map((edge) => edge.node.content)).toEqual(['x0', 'y1', 'y2', 'x3', 'y4']);
      expect(cached).toEqual(stored.slice(0, 3));
      expect(await transcript(behind, 'cached')).toEqual(stored);
      const heard = await live.received(4);
      expect(heard.map((edge) => keyOf(edge.cursor))).toEqual(
        stored.slice(1).map((edge) => keyOf(edge.cursor)),
      );
      expect(heard.map((edge) => edge.node.content)).toEqual(['y1', 'y2', 'x3', 'y4']);
    },
  );
  faultTest(
    'an append placed after the keys of an instance two days ahead leaves the clock of its own',
    async () => {
      const schema = await createPostgresSchema();
      cleanups.add(schema.drop);
      const ahead = await instance(schema.url, '+2d');
      const right = await instance(schema.url, '+0');
      const minutes = 5 * 60_000;

      await append(ahead, 'shared', 'c1');
      await append(right, 'shared', 'a1');
      await append(right, 'mine', 't1');

      const shared = await transcript(right, 'shared');
      expect(shared.map((edge) => edge.node.content)).toEqual(['c1', 'a1']);
      expect(keyOf(shared[1].cursor) > keyOf(shared[0].cursor)).toBe(true);
      // libfaketime works: the first message was timed two days on, the second (stored after
      // it) keeps the time of the instance that took it.
      expect(Date.parse(shared[0].node.createdAt as string)).toBeGreaterThan(
        Date.now() + 2 * 86_400_000 - minutes,
      );
      expect(Math.abs(Date.parse(shared[1].node.createdAt as string) - Date.now())).toBeLessThan(
        minutes,
      );
      // The other session's message is timed by the right clock: the key a1 was stored with
      // (two days on) did not carry it on.
      const [mine] = await transcript(right, 'mine');
      expect(Math.abs(Date.parse(mine.node.createdAt as string) - Date.now())).toBeLessThan(
        minutes,
      );
      const [, keyMs] = /(\d{15})\.\d{6}\./.exec(keyOf(mine.cursor)) ?? [];
      expect(Math.abs(Number(keyMs) - Date.now())).toBeLessThan(minutes);
    },
  );
});
