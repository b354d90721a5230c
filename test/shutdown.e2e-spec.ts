import { databaseKinds, createPostgresSchema } from './support/databases.js';
import { startServer, temporaryDataDir, type ProcessEnd } from './support/server-process.js';

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id } } }`;
const READ = `query($id: ID!) { session(id: $id) { messageCount messages(first: 1000) { edges { node { id } } } } }`;

describe.each(databaseKinds())('graceful shutdown of a real server process on %s', (database) => {
  it('loses no acknowledged append when SIGTERM arrives while appends are in flight', async () => {
    const dataDir = await temporaryDataDir();
    const postgres = database === 'postgres' ? await createPostgresSchema() : undefined;
    const env = {
      DATA_DIR: dataDir.path,
      DB_RETRY_INTERVAL_MS: '0',
      ...(postgres ? { DATABASE_URL: postgres.url } : {}),
    };
    try {
      const server = await startServer(env);
      const acknowledged: string[] = [];
      let answered = 0;
      let terminated: Promise<ProcessEnd> | undefined;
      // Eight clients append back to back; SIGTERM goes out once 40 appends were answered,
      // with the others still in flight.
      await Promise.all(
        Array.from({ length: 8 }, async (_, client) => {
          for (let i = 0; i < 200; i++) {
            const response = await server
              .gql(APPEND, {
                input: { sessionId: 'drain', role: 'USER', content: `${client}-${i}` },
              })
              .catch(() => undefined);
            const id = response?.data?.appendMessage?.message?.id as string | undefined;
            if (!id) return; // refused or connection closed: not acknowledged, so not owed
            acknowledged.push(id);
            answered += 1;
            if (answered === 40) terminated = server.stop('SIGTERM');
          }
        }),
      );
      expect(terminated).toBeDefined();
      expect(await terminated).toEqual({ code: null, signal: 'SIGTERM' });
      expect(server.output()).toMatch(/Shutting down: waited for \d+ in-flight append/);
      expect(acknowledged.length).toBeGreaterThanOrEqual(40);

      const restarted = await startServer(env);
      try {
        const read = await restarted.gql(READ, { id: 'drain' });
        const stored = new Set(read.data.session.messages.edges.map((edge: any) => edge.node.id));
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
        expect(read.data.session.messageCount).toBe(stored.size);
      } finally {
        await restarted.stop();
      }
    } finally {
      await postgres?.drop();
      await dataDir.remove();
    }
  });
});

describe('configuration of a real server process', () => {
  it('refuses to start with one clear line naming a bad variable', async () => {
    const dataDir = await temporaryDataDir();
    try {
      await expect(startServer({ DATA_DIR: dataDir.path, PORT: 'eighty' })).rejects.toThrow(
        /invalid configuration: PORT must be a whole number/,
      );
      await expect(
        startServer({ DATA_DIR: dataDir.path, SESSION_RESOLVE_CONCURRENCY: '65' }),
      ).rejects.toThrow(/SESSION_RESOLVE_CONCURRENCY must not be greater than 64/);
      await expect(
        startServer({ DATA_DIR: dataDir.path, DATABASE_URL: 'mysql://x' }),
      ).rejects.toThrow(/DATABASE_URL must be a postgres:\/\//);
    } finally {
      await dataDir.remove();
    }
  });
});
