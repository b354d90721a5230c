import { chmod, chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  appendMessage,
  eventually,
  faultSuite,
  holdSqliteLock,
  readJournal,
} from './support/fault-helpers.js';
import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';

// A page of a session whose journal-only messages are in a segment that cannot be read now
// (mode 000 under a server that is not root): a page that would list one of them answers
// JOURNAL_UNAVAILABLE rather than a page with a gap that paging never fills; a page that does
// not reach them is answered, and totalCount counts every accepted message all along.
const { cleanups, faultTest } = faultSuite(60_000);
const NOBODY = { uid: 65534, gid: 65534 };
const SESSION = 'unreadable-page';
const CAP = 5;
const PAGE = `query($id: ID!, $first: Int, $last: Int) {
  session(id: $id) {
    messageCount
    messages(first: $first, last: $last) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage }
      edges { node { content status } }
    }
  }
}`;

async function startAsNobody(dataDir: string): Promise<ServerProcess> {
  const started = await startServer(
    { DATA_DIR: dataDir, MAX_PENDING_PER_SESSION: String(CAP), DB_RETRY_INTERVAL_MS: '200' },
    { runAs: NOBODY },
  );
  cleanups.showOnFailure(`server pid ${started.child.pid}`, () => started.output());
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

async function page(target: ServerProcess, args: { first?: number; last?: number }) {
  return target.gql(PAGE, { id: SESSION, ...args });
}

async function listed(target: ServerProcess, args: { first?: number; last?: number }) {
  const answer = await page(target, args);
  expect(answer.errors).toBeUndefined();
  const messages = answer.data.session.messages;
  return {
    contents: messages.edges.map((edge: any) => edge.node.content as string),
    statuses: messages.edges.map((edge: any) => edge.node.status as string),
    totalCount: messages.totalCount as number,
    pageInfo: messages.pageInfo as { hasNextPage: boolean; hasPreviousPage: boolean },
  };
}

async function expectRefused(target: ServerProcess, args: { first?: number; last?: number }) {
  const answer = await page(target, args);
  expect(answer.status).toBe(200);
  expect(answer.errors?.map((error: any) => error.extensions?.code)).toEqual([
    'JOURNAL_UNAVAILABLE',
  ]);
  expect(answer.errors?.[0].message).toMatch(/journal file that cannot be read now/);
  expect(answer.errors?.[0].extensions?.stacktrace).toBeUndefined();
}

describe('a page that needs journal-only messages in a segment that cannot be read', () => {
  faultTest(
    'answers JOURNAL_UNAVAILABLE for that page, answers the pages that need none with totalCount true, and lists them all once the file reads again',
    async () => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      const spoolDir = join(dataDir.path, 'pending_messages');
      await mkdir(spoolDir, { mode: 0o700 });
      for (const path of [dataDir.path, spoolDir]) await chown(path, NOBODY.uid, NOBODY.gid);
      const target = await startAsNobody(dataDir.path);
      const stored = ['stored-1', 'stored-2'];
      for (const content of stored) {
        expect((await appendMessage(target, SESSION, content)).status).toBe('PERSISTED');
      }
      const holder = await holdSqliteLock(join(dataDir.path, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      // queued-1…5 leave memory past the cap: only the journal holds them.
      const queued = Array.from({ length: 2 * CAP }, (_, index) => `queued-${index + 1}`);
      for (const content of queued) {
        expect((await appendMessage(target, SESSION, content)).status).toBe('QUEUED');
      }
      // A session the database holds nothing of, its oldest message in the journal only.
      for (let index = 0; index <= CAP; index += 1) {
        expect((await appendMessage(target, 'fresh', `fresh-${index}`)).status).toBe('QUEUED');
      }
      const accepted = [...stored, ...queued];
      const { segments } = await readJournal(spoolDir);
      expect(segments).toHaveLength(1);
      await chmod(join(spoolDir, segments[0]), 0o000);

      // Pages that end before the unreadable messages (oldest first, newest first).
      expect(await listed(target, { first: 2 })).toEqual({
        contents: stored,
        statuses: ['PERSISTED', 'PERSISTED'],
        totalCount: accepted.length,
        pageInfo: { hasNextPage: true, hasPreviousPage: false },
      });
      expect(await listed(target, { last: CAP })).toEqual({
        contents: queued.slice(CAP),
        statuses: Array<string>(CAP).fill('QUEUED'),
        totalCount: accepted.length,
        pageInfo: { hasNextPage: false, hasPreviousPage: true },
      });
      // Pages that would list one: refused, not answered with a gap.
      await expectRefused(target, { first: 3 });
      await expectRefused(target, { first: 100 });
      await expectRefused(target, { last: CAP + 1 });
      // When it began, or that it exists, is not known while its oldest cannot be read.
      const fresh = await target.gql('query { session(id: "fresh") { createdAt } }');
      expect(fresh.errors?.map((error: any) => error.extensions?.code)).toEqual([
        'JOURNAL_UNAVAILABLE',
      ]);

      await chmod(join(spoolDir, segments[0]), 0o600);
      // Read back again while the database is still locked: the whole order, nothing lost.
      await eventually(async () => {
        const all = await listed(target, { first: 100 });
        expect(all.contents).toEqual(accepted);
        expect(all.totalCount).toBe(accepted.length);
      }, 15_000);
      const began = await target.gql('query { session(id: "fresh") { messageCount } }');
      expect(began.data.session).toEqual({ messageCount: 0 });
      await holder.release();
      await eventually(async () => {
        const all = await listed(target, { first: 100 });
        expect(all.statuses).toEqual(Array<string>(accepted.length).fill('PERSISTED'));
        expect(all.contents).toEqual(accepted);
      }, 40_000);
    },
  );
});
