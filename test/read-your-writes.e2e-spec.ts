import { faultSuite, appendMessage, eventually } from './support/fault-helpers.js';

// Read your own accepted writes, under a real fault: the SQLite write lock held by another
// process, so that appends are answered QUEUED while reads still work (WAL).
const TEST_TIMEOUT_MS = 30_000;
const LISTING = `query($id: ID!, $first: Int, $last: Int) {
  session(id: $id) {
    messageCount
    messages(first: $first, last: $last) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage }
      edges { node { id content status } }
    }
  }
}`;

const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS);

describe('a read shows the messages this instance accepted and holds, in their places (SQLite lock held by another process)', () => {
  faultTest(
    'QUEUED messages are listed after the stored ones, paged both ways, and become PERSISTED once stored',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir, DB_RETRY_INTERVAL_MS: '200' });
      const listing = async (id: string, page: { first?: number; last?: number }) =>
        (await target.gql(LISTING, { id, ...page })).data.session;
      for (const content of ['stored-1', 'stored-2']) {
        expect((await appendMessage(target, 'ryw', content)).status).toBe('PERSISTED');
      }

      const holder = await lockDatabase(dataDir);
      const queued = [];
      for (const content of ['held-1', 'held-2', 'held-3']) {
        const answer = await appendMessage(target, 'ryw', content);
        expect(answer.status).toBe('QUEUED');
        queued.push(answer.id);
      }
      const fresh = await appendMessage(target, 'ryw-new', 'first ever');
      expect(fresh.status).toBe('QUEUED');

      const all = await listing('ryw', { first: 10 });
      expect(all.messageCount).toBe(2);
      expect(all.messages.totalCount).toBe(5);
      expect(all.messages.edges.map((edge: any) => [edge.node.content, edge.node.status])).toEqual([
        ['stored-1', 'PERSISTED'],
        ['stored-2', 'PERSISTED'],
        ['held-1', 'QUEUED'],
        ['held-2', 'QUEUED'],
        ['held-3', 'QUEUED'],
      ]);
      expect(all.messages.edges.slice(2).map((edge: any) => edge.node.id)).toEqual(queued);

      const newest = await listing('ryw', { last: 2 });
      expect(newest.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'held-2',
        'held-3',
      ]);
      expect(newest.messages.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: true });
      const oldest = await listing('ryw', { first: 3 });
      expect(oldest.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'stored-1',
        'stored-2',
        'held-1',
      ]);
      expect(oldest.messages.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false });

      // A session whose only messages are held exists for the instance that holds them.
      const unstored = await listing('ryw-new', { first: 10 });
      expect(unstored.messageCount).toBe(0);
      expect(unstored.messages.edges.map((edge: any) => edge.node)).toEqual([
        { id: fresh.id, content: 'first ever', status: 'QUEUED' },
      ]);

      await holder.release();
      await eventually(async () => {
        const stored = await listing('ryw', { first: 10 });
        expect(stored.messageCount).toBe(5);
        expect(stored.messages.edges.map((edge: any) => edge.node.status)).toEqual(
          Array(5).fill('PERSISTED'),
        );
        expect((await listing('ryw-new', { first: 10 })).messageCount).toBe(1);
      });
    },
  );
});
