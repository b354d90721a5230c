import { v4 as uuidV4 } from 'uuid';
import { eventually, faultSuite } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// The same messages imported into two sessions while the database is away: both imports are
// journaled (QUEUED), since neither can see the other's. Once the database is back, one
// session's write-back stores them; the other's finds their ids stored, as another session's
// messages. Those were never stored for it: they must be set aside, with their reason, for an
// operator, never let go of as if stored.
const ADMIN = { authorization: 'Bearer t' };
const MESSAGES = 20;
const SESSIONS = ['first', 'second'];

const { faultTest, dataDirectory, lockDatabase, server } = faultSuite(60_000, {
  API_TOKENS: 't=admin',
  DB_RETRY_INTERVAL_MS: '200',
});

async function importInto(target: ServerProcess, sessionId: string, ids: string[]) {
  const head = JSON.stringify({
    session: {
      id: sessionId,
      title: null,
      metadata: null,
      createdAt: '2024-01-01T00:00:00.000Z',
      updatedAt: '2024-01-01T00:00:00.000Z',
      messageCount: ids.length,
      revision: ids.length,
    },
  });
  const lines = ids.map((id) =>
    JSON.stringify({
      message: { id, role: 'USER', content: `m ${id}`, createdAt: '2024-01-02T03:04:05.678Z' },
    }),
  );
  const answer = await fetch(`${target.url}/sessions/${sessionId}/import`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', ...ADMIN },
    body: [head, ...lines].join('\n'),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}

/** Once nothing is owed: one session holds every message, the other's are all set aside. */
async function expectOneStoredOtherSetAside(target: ServerProcess, ids: string[]): Promise<void> {
  const spool = await eventually(async () => {
    const answer = await target.gql(
      '{ spoolStatus { messages setAsideCount setAside { sessionId messageId reason } } }',
      {},
      ADMIN,
    );
    const status = answer.data.spoolStatus;
    expect(status.messages).toBe(0);
    expect(status.setAsideCount).toBe(ids.length);
    return status;
  }, 15_000);
  const stored = await Promise.all(
    SESSIONS.map(async (id) => {
      const answer = await target.gql(
        'query($id: ID!) { session(id: $id) { messages(first: 100) { edges { node { id } } } } }',
        { id },
        ADMIN,
      );
      const edges: { node: { id: string } }[] = answer.data?.session?.messages.edges ?? [];
      return edges.map((edge) => edge.node.id);
    }),
  );
  expect(stored.map((list) => list.length).sort()).toEqual([0, ids.length]);
  expect(new Set(stored.flat())).toEqual(new Set(ids));
  const other = stored[0].length > 0 ? SESSIONS[1] : SESSIONS[0];
  const setAside: { sessionId: string; messageId: string; reason: string }[] = spool.setAside;
  expect(new Set(setAside.map((entry) => entry.sessionId))).toEqual(new Set([other]));
  expect(new Set(setAside.map((entry) => entry.messageId))).toEqual(new Set(ids));
  expect(setAside[0].reason).toMatch(/another session's message/);
}

/** Imports `ids` into both sessions while `dataDir`'s database is locked: both QUEUED. */
async function importBothQueued(target: ServerProcess, ids: string[]): Promise<void> {
  for (const sessionId of SESSIONS) {
    const answer = await importInto(target, sessionId, ids);
    expect({ status: answer.status, body: answer.body.status }).toEqual({
      status: 200,
      body: 'QUEUED',
    });
  }
}

describe('the same messages imported into two sessions during an outage', () => {
  faultTest(
    "stores them in one session and sets the other's aside, letting go of none unstored",
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir });
      const holder = await lockDatabase(dataDir);
      const ids = Array.from({ length: MESSAGES }, () => uuidV4());
      await importBothQueued(target, ids);

      await holder.release();

      await expectOneStoredOtherSetAside(target, ids);
    },
  );

  // The journal taken over at start holds both sessions' records: the same id twice, but two
  // records, not two copies of one.
  faultTest('does the same after a restart that replays the journal', async () => {
    const dataDir = await dataDirectory();
    const first = await server({ DATA_DIR: dataDir });
    const holder = await lockDatabase(dataDir);
    const ids = Array.from({ length: MESSAGES }, () => uuidV4());
    await importBothQueued(first, ids);
    await first.stop('SIGTERM');
    await holder.release();

    const second = await server({ DATA_DIR: dataDir });

    await expectOneStoredOtherSetAside(second, ids);
  });
});
