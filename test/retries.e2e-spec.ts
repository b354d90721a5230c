import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  faultSuite,
  appendMessage,
  eventually,
  readJournal,
  type AppendStatus,
} from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// A client that did not get (or did not trust) an answer sends the append again with the same
// clientMessageId. Whatever state the first acceptance is in (stored, held in memory, on disk
// only, held in memory only, during an outage or after it), the retry must get the first
// answer's id and createdAt, and the message must be stored once, in the first one's place;
// the same client id sent with other content is refused IDEMPOTENCY_CONFLICT in each state.
const TEST_TIMEOUT_MS = 30_000;
const ADMIN = { authorization: 'Bearer t' };

const APPEND_PLACE = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id content createdAt } }
}`;
const READ_PLACES = `query($id: ID!) {
  session(id: $id) {
    messageCount
    messages(first: 1000) { edges { node { id content clientMessageId createdAt } } }
  }
}`;

// No session cache where reads are checked: every read is the database's own word.
const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS, {
  ADMIN_TOKEN: 't',
  SESSION_CACHE_SIZE: '0',
  DB_RETRY_INTERVAL_MS: '200',
});

interface Placed {
  status: AppendStatus;
  id: string;
  content: string;
  createdAt: string;
}

async function appendPlaced(
  target: ServerProcess,
  sessionId: string,
  content: string,
  clientMessageId?: string,
): Promise<Placed> {
  const response = await target.gql(APPEND_PLACE, {
    input: { sessionId, role: 'USER', content, ...(clientMessageId ? { clientMessageId } : {}) },
  });
  if (response.errors || !response.data?.appendMessage) {
    throw new Error(`append of ${content} failed: ${JSON.stringify(response.body)}`);
  }
  const { status, message } = response.data.appendMessage;
  return { status, ...message };
}

async function readPlaces(target: ServerProcess, sessionId: string) {
  const response = await target.gql(READ_PLACES, { id: sessionId });
  if (response.errors) throw new Error(`read failed: ${JSON.stringify(response.errors)}`);
  const session = response.data?.session;
  const nodes: {
    id: string;
    content: string;
    clientMessageId: string | null;
    createdAt: string;
  }[] = session ? session.messages.edges.map((edge: any) => edge.node) : [];
  return { messageCount: session?.messageCount ?? 0, nodes };
}

/**
 * The retry got the first acceptance's answer: its id and createdAt (its place). Pins
 * TranscriptService.earlierAnswers for the state it covers.
 */
function expectFirstAnswer(retry: Placed, first: Placed, status: AppendStatus): void {
  expect(retry).toEqual({ ...first, status });
}

/** The client id sent again with other content: refused, whatever state its message is in. */
async function expectConflict(
  target: ServerProcess,
  sessionId: string,
  content: string,
  clientMessageId: string,
): Promise<void> {
  const response = await target.gql(APPEND_PLACE, {
    input: { sessionId, role: 'USER', content, clientMessageId },
  });
  expect(response.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_CONFLICT');
  expect(response.data?.appendMessage ?? null).toBeNull();
}

/** Stored once each, in `expected` order, each with the id and createdAt its answer gave. */
async function expectStored(target: ServerProcess, sessionId: string, expected: Placed[]) {
  const stored = await readPlaces(target, sessionId);
  expect(stored.nodes.map((node) => node.content)).toEqual(
    expected.map((answer) => answer.content),
  );
  expect(stored.nodes.map((node) => [node.id, node.createdAt])).toEqual(
    expected.map((answer) => [answer.id, answer.createdAt]),
  );
  expect(stored.messageCount).toBe(expected.length);
}

const SESSION = 'retried';

describe('a retry with the same clientMessageId gets the first answer and stores nothing new', () => {
  faultTest('when the first acceptance is stored', async () => {
    const target = await server({ DATA_DIR: await dataDirectory() });
    const first = await appendPlaced(target, SESSION, 'first', 'c-1');
    expect(first.status).toBe('PERSISTED');
    const second = await appendPlaced(target, SESSION, 'second');

    // Found in the database by its client id.
    await expectConflict(target, SESSION, 'first, edited', 'c-1');
    const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
    expectFirstAnswer(retry, first, 'PERSISTED');
    const third = await appendPlaced(target, SESSION, 'third');
    await expectStored(target, SESSION, [first, second, third]);
  });

  faultTest('when the first acceptance is queued in memory during an outage', async () => {
    const dataDir = await dataDirectory();
    const target = await server({ DATA_DIR: dataDir });
    const holder = await lockDatabase(dataDir);
    const first = await appendPlaced(target, SESSION, 'first', 'c-1');
    expect(first.status).toBe('QUEUED');
    const second = await appendPlaced(target, SESSION, 'second');

    // Found in the session's pending queue.
    await expectConflict(target, SESSION, 'first, edited', 'c-1');
    const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
    expectFirstAnswer(retry, first, 'QUEUED');
    const third = await appendPlaced(target, SESSION, 'third');
    // Journaled once: the retry added no line of its own.
    const journal = await readJournal(join(dataDir, 'pending_messages'));
    expect(journal.map((line) => line.id)).toEqual([first.id, second.id, third.id]);

    await holder.release();
    await eventually(() => expectStored(target, SESSION, [first, second, third]), 10_000);
  });

  faultTest(
    'when the first acceptance is on disk only (evicted from memory past the cap)',
    async () => {
      const cap = 2;
      const dataDir = await dataDirectory();
      const spoolDir = join(dataDir, 'pending_messages');
      const target = await server({ DATA_DIR: dataDir, MAX_PENDING_PER_SESSION: String(cap) });
      const holder = await lockDatabase(dataDir);
      const first = await appendPlaced(target, SESSION, 'first', 'c-1');
      const second = await appendPlaced(target, SESSION, 'second');
      const third = await appendPlaced(target, SESSION, 'third');
      expect([first.status, second.status, third.status]).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
      // Past the cap the oldest left memory: only the journal holds it now (its warning is
      // printed while the answer goes out: waited for).
      await target.waitForOutput(
        `pending queue full for ${SESSION} (cap=${cap}); spooled oldest message to ${spoolDir} for replay after DB recovery (message ${first.id})`,
      );
      const pending = await target.gql('{ pendingStatus { totalPending } }', {}, ADMIN);
      expect(pending.data.pendingStatus.totalPending).toBe(cap);

      // Found in the journal on disk.
      await expectConflict(target, SESSION, 'first, edited', 'c-1');
      const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
      expectFirstAnswer(retry, first, 'QUEUED');
      const fourth = await appendPlaced(target, SESSION, 'fourth');
      const journal = await readJournal(spoolDir);
      expect(journal.filter((line) => line.id === first.id)).toHaveLength(1);

      await holder.release();
      await eventually(() => expectStored(target, SESSION, [first, second, third, fourth]), 10_000);
    },
  );

  faultTest(
    'when the first acceptance is held in memory only (BUFFERED: the spool is unusable)',
    async () => {
      const dataDir = await dataDirectory();
      const blocker = join(dataDir, 'not-a-directory');
      await writeFile(blocker, 'a regular file where the spool directory should be\n');
      const target = await server({ DATA_DIR: dataDir, SPOOL_DIR: join(blocker, 'spool') });
      const holder = await lockDatabase(dataDir);
      const first = await appendPlaced(target, SESSION, 'first', 'c-1');
      expect(first.status).toBe('BUFFERED');
      const second = await appendPlaced(target, SESSION, 'second');

      // Found in memory; the disk still refuses it, so it is still BUFFERED.
      await expectConflict(target, SESSION, 'first, edited', 'c-1');
      const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
      expectFirstAnswer(retry, first, 'BUFFERED');
      const third = await appendPlaced(target, SESSION, 'third');

      await holder.release();
      await eventually(() => expectStored(target, SESSION, [first, second, third]), 10_000);
    },
  );

  faultTest(
    'when the first acceptance is stored and the retry comes during an outage (SQLite lock held: reads still work in WAL)',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir });
      const first = await appendPlaced(target, SESSION, 'first', 'c-1');
      const second = await appendPlaced(target, SESSION, 'second');
      expect([first.status, second.status]).toEqual(['PERSISTED', 'PERSISTED']);
      const holder = await lockDatabase(dataDir);

      // Found by a read, which the lock does not stop: nothing is written or journaled.
      await expectConflict(target, SESSION, 'first, edited', 'c-1');
      const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
      expectFirstAnswer(retry, first, 'PERSISTED');
      const third = await appendPlaced(target, SESSION, 'third');
      expect(third.status).toBe('QUEUED');
      const journal = await readJournal(join(dataDir, 'pending_messages'));
      expect(journal.map((line) => line.id)).toEqual([third.id]);

      await holder.release();
      await eventually(() => expectStored(target, SESSION, [first, second, third]), 10_000);
    },
  );

  faultTest(
    'when the first acceptance was queued during an outage and the retry comes after recovery',
    async () => {
      const dataDir = await dataDirectory();
      const target = await server({ DATA_DIR: dataDir });
      const holder = await lockDatabase(dataDir);
      const first = await appendPlaced(target, SESSION, 'first', 'c-1');
      const second = await appendPlaced(target, SESSION, 'second');
      expect([first.status, second.status]).toEqual(['QUEUED', 'QUEUED']);
      await holder.release();
      // Written back by the background retry, with the places accepted during the outage.
      await eventually(() => expectStored(target, SESSION, [first, second]), 10_000);

      await expectConflict(target, SESSION, 'first, edited', 'c-1');
      const retry = await appendPlaced(target, SESSION, 'first', 'c-1');
      expectFirstAnswer(retry, first, 'PERSISTED');
      const third = await appendPlaced(target, SESSION, 'third');
      expect(third.status).toBe('PERSISTED');
      await expectStored(target, SESSION, [first, second, third]);
    },
  );
});

describe('two instances sharing one SQLite DATA_DIR', () => {
  faultTest(
    'racing one clientMessageId during an outage end with one stored message, whose id both clients hold',
    async () => {
      const dataDir = await dataDirectory();
      const spoolDir = join(dataDir, 'pending_messages');
      const left = await server({ DATA_DIR: dataDir });
      const right = await server({ DATA_DIR: dataDir });
      const before = await appendPlaced(left, SESSION, 'before');
      expect(before.status).toBe('PERSISTED');
      const holder = await lockDatabase(dataDir);

      // The same client message reaches both instances at once (a retry sent to another
      // instance after a timeout); neither can see the other's acceptance.
      const [fromLeft, fromRight] = await Promise.all([
        appendPlaced(left, SESSION, 'raced', 'c-race'),
        appendPlaced(right, SESSION, 'raced', 'c-race'),
      ]);
      expect([fromLeft.status, fromRight.status]).toEqual(['QUEUED', 'QUEUED']);
      // Pins: an id derived from the session and client id, the same on every instance.
      expect(fromRight.id).toBe(fromLeft.id);
      const leftAfter = await appendMessage(left, SESSION, 'left-after');
      const rightAfter = await appendMessage(right, SESSION, 'right-after');

      await holder.release();
      // Both write back; the second insert of the id is skipped, not refused or duplicated.
      await eventually(async () => {
        const stored = await readPlaces(left, SESSION);
        expect(stored.nodes.map((node) => node.content).sort()).toEqual(
          ['before', 'left-after', 'raced', 'right-after'].sort(),
        );
        expect(stored.messageCount).toBe(4);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      }, 15_000);
      const stored = await readPlaces(right, SESSION);
      expect(stored.nodes[0].id).toBe(before.id);
      const raced = stored.nodes.filter((node) => node.clientMessageId === 'c-race');
      expect(raced).toHaveLength(1);
      expect(raced[0].id).toBe(fromLeft.id);
      // Stored in the place one of the two acceptances gave it.
      expect([fromLeft.createdAt, fromRight.createdAt]).toContain(raced[0].createdAt);
      expect(stored.nodes.map((node) => node.id).sort()).toEqual(
        [before.id, fromLeft.id, leftAfter.id, rightAfter.id].sort(),
      );

      // Nothing was set aside as a refusal on either instance (a duplicate is not poison).
      for (const target of [left, right]) {
        const spool = await target.gql('{ spoolStatus { setAsideCount } }', {}, ADMIN);
        expect(spool.data.spoolStatus.setAsideCount).toBe(0);
        expect(target.output()).not.toMatch(/Set aside/);
      }
      // From now on both instances answer a retry with the stored message.
      const winner = { status: 'PERSISTED' as const, id: raced[0].id, content: 'raced' };
      for (const target of [left, right]) {
        await expectConflict(target, SESSION, 'raced, edited', 'c-race');
        const retry = await appendPlaced(target, SESSION, 'raced', 'c-race');
        expect(retry).toEqual({ ...winner, createdAt: raced[0].createdAt });
      }
      expect((await readPlaces(left, SESSION)).messageCount).toBe(4);
    },
  );
});
