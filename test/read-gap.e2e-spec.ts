import { type ServerProcess } from './support/server-process.js';
import { faultSuite, appendMessage, eventually } from './support/fault-helpers.js';

// No gap in a read: past MAX_PENDING_PER_SESSION, the oldest held messages of a session are in
// the journal only, and a read on the instance must still list every accepted message in its
// place. The fault is real: another process holds the SQLite write lock (reads go on in WAL).
// PostgreSQL is left out on purpose: there a write is held only while the database cannot be
// reached, and a read fails then too.
const TEST_TIMEOUT_MS = 60_000;
const CAP = 5;
const PAGE = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  session(id: $id) {
    messages(first: $first, after: $after, last: $last, before: $before) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      edges { node { content status } }
    }
  }
}`;
const APPEND_BATCH = `mutation($input: AppendMessagesInput!) {
  appendMessages(input: $input) { status }
}`;

interface Listed {
  totalCount: number;
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
  edges: { node: { content: string; status: string } }[];
}

const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS);

async function page(target: ServerProcess, id: string, args: Record<string, unknown>) {
  const response = await target.gql(PAGE, { id, ...args });
  if (response.errors) throw new Error(`read failed: ${JSON.stringify(response.errors)}`);
  return response.data.session.messages as Listed;
}

/** Every message of the session, paged `size` at a time forward or backward. */
async function walk(target: ServerProcess, id: string, size: number, direction: 'first' | 'last') {
  const seen: string[] = [];
  let cursor: string | null | undefined;
  for (let pages = 0; pages < 100; pages += 1) {
    const forward = direction === 'first';
    const listed = await page(target, id, {
      [direction]: size,
      ...(cursor ? { [forward ? 'after' : 'before']: cursor } : {}),
    });
    const contents = listed.edges.map((edge) => edge.node.content);
    if (forward) seen.push(...contents);
    else seen.unshift(...contents);
    const more = forward ? listed.pageInfo.hasNextPage : listed.pageInfo.hasPreviousPage;
    if (!more) return seen;
    cursor = forward ? listed.pageInfo.endCursor : listed.pageInfo.startCursor;
  }
  throw new Error(`paging ${id} did not end`);
}

/** The page lists exactly `accepted`, in order, the stored ones first; `total` in all. */
function expectNoGap(listed: Listed, accepted: string[], total = accepted.length): void {
  expect(listed.edges.map((edge) => edge.node.content)).toEqual(accepted);
  const statuses = listed.edges.map((edge) => edge.node.status);
  const stored = statuses.filter((status) => status === 'PERSISTED').length;
  expect(statuses).toEqual([
    ...Array<string>(stored).fill('PERSISTED'),
    ...Array<string>(accepted.length - stored).fill('QUEUED'),
  ]);
  expect(listed.totalCount).toBe(total);
}

describe('a read shows no gap past MAX_PENDING_PER_SESSION (SQLite lock held by another process)', () => {
  faultTest(
    'journal-only messages are listed in their places, paged both ways, while down and while draining',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({
        DATA_DIR: dataDir,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      });
      expect((await appendMessage(target, 'b', 'stored')).status).toBe('PERSISTED');

      const holder = await lockDatabase(dataDir);
      const small = ['stored'];
      for (let index = 0; index <= CAP; index += 1) {
        expect((await appendMessage(target, 'b', `b${index}`)).status).toBe('QUEUED');
        small.push(`b${index}`);
      }
      // Three batches: most of them only in the journal, the newest CAP held in memory.
      const large: string[] = [];
      for (let batch = 0; batch < 3; batch += 1) {
        const messages = Array.from({ length: 1000 }, (_, index) => ({
          role: 'USER',
          content: `m${batch * 1000 + index}`,
        }));
        const answer = await target.gql(APPEND_BATCH, { input: { sessionId: 'big', messages } });
        expect(answer.data?.appendMessages.status).toBe('QUEUED');
        large.push(...messages.map((message) => message.content));
      }

      // b0 is in the journal only, b1…b5 in memory: b0 is listed before them, QUEUED.
      expectNoGap(await page(target, 'b', { first: 100 }), small);
      const newest = await page(target, 'b', { last: 3 });
      expect(newest.edges.map((edge) => edge.node.content)).toEqual(['b3', 'b4', 'b5']);
      expect(newest.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
      const oldest = await page(target, 'b', { first: 2 });
      expect(oldest.edges.map((edge) => edge.node.content)).toEqual(['stored', 'b0']);
      expect(oldest.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
      for (const size of [1, 2, 3]) {
        expect(await walk(target, 'b', size, 'first')).toEqual(small);
        expect(await walk(target, 'b', size, 'last')).toEqual(small);
      }
      expectNoGap(await page(target, 'big', { first: 1000 }), large.slice(0, 1000), large.length);
      expectNoGap(await page(target, 'big', { last: 10 }), large.slice(-10), large.length);
      const middle = await page(target, 'big', { first: 1000 });
      expectNoGap(
        await page(target, 'big', { first: 1000, after: middle.pageInfo.endCursor }),
        large.slice(1000, 2000),
        large.length,
      );
      expect(await walk(target, 'big', 1000, 'last')).toEqual(large);

      // While it drains, every read is the whole accepted order, its stored part a prefix.
      await holder.release();
      let reads = 0;
      let halfStored = 0;
      const deadline = Date.now() + 20_000;
      // A gap fails at once: only "not all stored yet" is waited out.
      for (let drained = false; !drained; reads += 1) {
        expect(Date.now()).toBeLessThan(deadline);
        const expectations: [Listed, string[], number][] = [
          [await page(target, 'b', { first: 100 }), small, small.length],
          [await page(target, 'big', { last: 1000 }), large.slice(-1000), large.length],
          [await page(target, 'big', { first: 1000 }), large.slice(0, 1000), large.length],
        ];
        drained = true;
        for (const [listed, accepted, total] of expectations) {
          expectNoGap(listed, accepted, total);
          const statuses = new Set(listed.edges.map((edge) => edge.node.status));
          if (statuses.size > 1) halfStored += 1;
          if (statuses.has('QUEUED')) drained = false;
        }
      }
      process.stderr.write(`read-gap: ${reads} reads while draining, ${halfStored} half stored\n`);

      // Down again after a drain: the stored prefix, then the journal-only one, then memory.
      const again = await lockDatabase(dataDir);
      for (let index = CAP + 1; index <= 2 * CAP + 1; index += 1) {
        expect((await appendMessage(target, 'b', `b${index}`)).status).toBe('QUEUED');
        small.push(`b${index}`);
      }
      const downAgain = await page(target, 'b', { first: 100 });
      expectNoGap(downAgain, small);
      expect(downAgain.edges.filter((edge) => edge.node.status === 'QUEUED')).toHaveLength(CAP + 1);
      expect(await walk(target, 'b', 2, 'last')).toEqual(small);
      await again.release();
      await eventually(async () => {
        const stored = await page(target, 'b', { first: 100 });
        expectNoGap(stored, small);
        expect(stored.edges.every((edge) => edge.node.status === 'PERSISTED')).toBe(true);
      }, 20_000);
    },
  );

  faultTest(
    'a page reads back at most MAX_PAGE_BYTES of the journal and ends before what it did not read',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({
        DATA_DIR: dataDir,
        MAX_PENDING_PER_SESSION: '2',
        MAX_PAGE_BYTES: '65536',
      });
      const holder = await lockDatabase(dataDir);
      const accepted: string[] = [];
      for (let index = 0; index < 12; index += 1) {
        // About 16 KiB each: a page holds a few of them, whatever its `first`.
        const content = `${String(index).padStart(2, '0')}:${'x'.repeat(16 * 1024)}`;
        expect((await appendMessage(target, 'wide', content)).status).toBe('QUEUED');
        accepted.push(content);
      }

      for (const direction of ['first', 'last'] as const) {
        const pages: number[] = [];
        const seen: string[] = [];
        let cursor: string | null = null;
        for (let more = true; more;) {
          const forward = direction === 'first';
          const listed = await page(target, 'wide', {
            [direction]: 1000,
            ...(cursor ? { [forward ? 'after' : 'before']: cursor } : {}),
          });
          expect(listed.totalCount).toBe(accepted.length);
          const contents = listed.edges.map((edge) => edge.node.content);
          pages.push(contents.length);
          if (forward) seen.push(...contents);
          else seen.unshift(...contents);
          more = forward ? listed.pageInfo.hasNextPage : listed.pageInfo.hasPreviousPage;
          cursor = forward ? listed.pageInfo.endCursor : listed.pageInfo.startCursor;
          expect(pages.length).toBeLessThan(20);
        }
        expect(seen).toEqual(accepted);
        // Ten in the journal only, read back a few lines a page; the held two come on top.
        expect(Math.max(...pages)).toBeLessThanOrEqual(6);
        expect(pages.length).toBeGreaterThan(2);
      }
      await holder.release();
    },
  );
});
