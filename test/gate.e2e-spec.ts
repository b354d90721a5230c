import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';

const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
const FULL_READ = `query($id: ID!) { session(id: $id) { revision messages(first: 1000) { totalCount edges { node { content } } } } }`;

async function metric(server: ServerProcess, name: string): Promise<number> {
  const response = await server.get('/metrics');
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(response.text);
  if (!match) throw new Error(`metric ${name} not found`);
  return Number(match[1]);
}

async function appendBatch(server: ServerProcess, sessionId: string, contents: string[]) {
  const response = await server.gql(APPEND_MANY, {
    input: { sessionId, messages: contents.map((content) => ({ role: 'USER', content })) },
  });
  expect(response.data?.appendMessages?.status).toBe('PERSISTED');
}

describe('SessionResolveGate in a real server process', () => {
  it('loads a cold session once for 40 concurrent full reads', async () => {
    const dataDir = await temporaryDataDir();
    const server = await startServer({ DATA_DIR: dataDir.path });
    try {
      const contents = Array.from({ length: 300 }, (_, i) => `line ${i}`);
      await appendBatch(server, 'hot', contents);
      const loadsBefore = await metric(server, 'scribe_session_full_loads_total');

      const answers = await Promise.all(
        Array.from({ length: 40 }, () => server.gql(FULL_READ, { id: 'hot' })),
      );

      for (const answer of answers) {
        expect(answer.errors).toBeUndefined();
        expect(answer.data.session.messages.totalCount).toBe(300);
        expect(answer.data.session.messages.edges.map((edge: any) => edge.node.content)).toEqual(
          contents,
        );
      }
      expect((await metric(server, 'scribe_session_full_loads_total')) - loadsBefore).toBe(1);

      // Metadata-only reads and the session list never load a transcript.
      await appendBatch(server, 'cold-other', ['x']);
      const metadata = await server.gql(`{ session(id: "cold-other") { id messageCount } }`);
      expect(metadata.data.session).toEqual({ id: 'cold-other', messageCount: 1 });
      await server.gql(`{ sessions { edges { node { id revision } } } }`);
      expect((await metric(server, 'scribe_session_full_loads_total')) - loadsBefore).toBe(1);
    } finally {
      await server.stop();
      await dataDir.remove();
    }
  });

  it('serves a write made through another process sharing the SQLite file', async () => {
    const dataDir = await temporaryDataDir();
    const writer = await startServer({ DATA_DIR: dataDir.path });
    const reader = await startServer({ DATA_DIR: dataDir.path });
    try {
      await appendBatch(writer, 'shared', ['first', 'second']);
      const cold = await reader.gql(FULL_READ, { id: 'shared' });
      expect(cold.data.session.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'first',
        'second',
      ]);
      // A second read is a fresh cache hit: no new full load.
      const loads = await metric(reader, 'scribe_session_full_loads_total');
      await reader.gql(FULL_READ, { id: 'shared' });
      expect(await metric(reader, 'scribe_session_full_loads_total')).toBe(loads);
      expect(await metric(reader, 'scribe_session_cache_hits_total')).toBe(1);

      await appendBatch(writer, 'shared', ['third']);
      const afterWrite = await reader.gql(FULL_READ, { id: 'shared' });

      expect(afterWrite.data.session.revision).toBe(3);
      expect(afterWrite.data.session.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'first',
        'second',
        'third',
      ]);
      expect(await metric(reader, 'scribe_session_stale_reloads_total')).toBe(1);
    } finally {
      await Promise.all([writer.stop(), reader.stop()]);
      await dataDir.remove();
    }
  });
});
