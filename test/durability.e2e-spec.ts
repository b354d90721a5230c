import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  faultSuite,
  appendMessage,
  dropWarnings,
  eventually,
  metricValue,
  occurrences,
  readJournal,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// Real processes, real faults: the server is the built dist/main.js, the database lock is held
// by another process, the spool is a real directory. Each test cleans up in afterEach.
const TEST_TIMEOUT_MS = 30_000;
const CAP = 4;
const SESSION = 'outage';

const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS, {
  ADMIN_TOKEN: 't',
});

/** Appends `contents` one after the other, expecting `status` for each; returns the ids. */
async function appendAll(
  target: ServerProcess,
  sessionId: string,
  contents: string[],
  status: AppendStatus,
): Promise<string[]> {
  const ids: string[] = [];
  for (const content of contents) {
    const answer = await appendMessage(target, sessionId, content);
    expect({ content, status: answer.status }).toEqual({ content, status });
    ids.push(answer.id);
  }
  return ids;
}

function numbered(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index + 1}`);
}

/**
 * Puts one session into an outage with overflow: `before` messages stored, then the SQLite
 * write lock taken by another process and CAP + 3 appends answered QUEUED: every one of them
 * in the journal on disk, the 3 oldest no longer in memory. Checks everything observable about
 * that state.
 */
async function queueAndSpoolDuringLock(env: Record<string, string>) {
  const dataDir = env.DATA_DIR;
  const spoolDir = join(dataDir, 'pending_messages');
  const target = await server(env);
  const before = numbered('before', 2);
  const beforeIds = await appendAll(target, SESSION, before, 'PERSISTED');

  const holder = await lockDatabase(dataDir);
  const locked = numbered('locked', CAP + 3);
  const lockedIds = await appendAll(target, SESSION, locked, 'QUEUED');

  // Every QUEUED message is in the journal, in acceptance order; past the cap the 3 oldest
  // left memory, each with the reference warning.
  const journal = await readJournal(spoolDir);
  expect(journal.map((line) => [line.sessionId, line.id, line.content])).toEqual(
    locked.map((content, index) => [SESSION, lockedIds[index], content]),
  );
  // Printed while the answers go out: the last is waited for, and the lines come in order.
  await target.waitForOutput(`(message ${lockedIds[2]})`);
  expect(occurrences(target.output(), 'spooled oldest message')).toBe(3);
  for (const id of lockedIds.slice(0, 3)) {
    expect(target.output()).toContain(
      `pending queue full for ${SESSION} (cap=${CAP}); spooled oldest message to ${spoolDir} for replay after DB recovery (message ${id})`,
    );
  }
  const pending = await target.gql(
    '{ pendingStatus { totalPending } spoolStatus { messages sessions { sessionId messages } } }',
    {},
    { authorization: 'Bearer t' },
  );
  expect(pending.data).toEqual({
    pendingStatus: { totalPending: CAP },
    spoolStatus: { messages: CAP + 3, sessions: [{ sessionId: SESSION, messages: CAP + 3 }] },
  });

  const health = await target.get('/health');
  expect(health.status).toBe(200);
  expect(health.body.status).toBe('degraded');
  expect(health.body.details.database.status).toBe('down');
  expect(health.body.details.spool.status).toBe('up');

  // Reads still work under the lock (WAL). What is stored is only what was before.
  expect((await readTranscript(target, SESSION)).contents).toEqual(before);

  return {
    target,
    holder,
    spoolDir,
    sent: [...before, ...locked],
    ids: [...beforeIds, ...lockedIds],
  };
}

describe('durability of acknowledged appends across a SQLite lock held by another process', () => {
  faultTest(
    'stores every queued and spooled message in send order once the lock is released, without a further append (background retry)',
    async () => {
      const dataDir = await dataDirectory();
      const { target, holder, spoolDir, sent, ids } = await queueAndSpoolDuringLock({
        DATA_DIR: dataDir,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      });

      await holder.release();

      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.contents).toEqual(sent);
        expect(stored.ids).toEqual(ids);
        expect(stored.messageCount).toBe(sent.length);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      });
      // Printed as the write-back begins, on a pipe the answers above can overtake: waited for.
      await target.waitForOutput(/Database writable again; writing back \d+ pending message/);
      const metrics = await target.get('/metrics');
      expect(metricValue(metrics.text, 'scribe_pending_messages')).toBe(0);
      expect(metricValue(metrics.text, 'scribe_spool_messages')).toBe(0);
      expect(metricValue(metrics.text, 'scribe_messages_dropped_total')).toBe(0);
    },
  );

  faultTest(
    'without a background retry (DB_RETRY_INTERVAL_MS=0), the next append after the release stores the backlog, the spool and itself, last',
    async () => {
      const dataDir = await dataDirectory();
      const { target, holder, spoolDir, sent, ids } = await queueAndSpoolDuringLock({
        DATA_DIR: dataDir,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '0',
      });

      await holder.release();
      const after = await appendMessage(target, SESSION, 'after-release');
      expect(after.status).toBe('PERSISTED');

      // The append wrote back the journal and the backlog before itself, then answered.
      const stored = await readTranscript(target, SESSION);
      expect(stored.contents).toEqual([...sent, 'after-release']);
      expect(stored.ids).toEqual([...ids, after.id]);
      expect(stored.messageCount).toBe(sent.length + 1);
      expect((await readJournal(spoolDir)).segments).toEqual([]);
    },
  );

  faultTest(
    'SIGTERM during the outage leaves the journal as it is, and the next start replays it all in send order before it answers',
    async () => {
      const dataDir = await dataDirectory();
      const env = {
        DATA_DIR: dataDir,
        MAX_PENDING_PER_SESSION: String(CAP),
        DB_RETRY_INTERVAL_MS: '200',
      };
      const { target, holder, spoolDir, sent, ids } = await queueAndSpoolDuringLock(env);

      expect(await target.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });
      expect(target.output()).toContain(
        `Shutdown: ${CAP} pending message(s) left in the journal at ${spoolDir}`,
      );
      // Everything not stored is on disk, in acceptance order.
      const lockedCount = CAP + 3;
      expect((await readJournal(spoolDir)).map((line) => line.id)).toEqual(ids.slice(-lockedCount));

      await holder.release();
      const restarted = await server(env);
      // Stored before the server said it was ready: no read can miss them.
      expect(restarted.output()).toContain(
        `Boot replay stored ${lockedCount} journaled message(s) of 1 session(s)`,
      );
      const stored = await readTranscript(restarted, SESSION);
      expect(stored.contents).toEqual(sent);
      expect(stored.ids).toEqual(ids);
      expect(stored.messageCount).toBe(sent.length);
      expect((await readJournal(spoolDir)).segments).toEqual([]);
    },
  );
});

describe('an unusable on-disk spool', () => {
  faultTest(
    'starts and serves appends, reports spool down, answers BUFFERED during a lock and drops past the cap with a count, and answers 503 while neither can take a write',
    async () => {
      const dataDir = await dataDirectory();
      const blocker = join(dataDir, 'not-a-directory');
      await writeFile(blocker, 'a regular file where the spool directory should be\n');
      const spoolDir = join(blocker, 'spool');
      const cap = 2;
      const target = await server({
        DATA_DIR: dataDir,
        SPOOL_DIR: spoolDir,
        MAX_PENDING_PER_SESSION: String(cap),
        DB_RETRY_INTERVAL_MS: '200',
      });
      expect(target.output()).toContain(`on-disk spool unavailable at ${spoolDir}`);

      const before = numbered('before', 2);
      await appendAll(target, SESSION, before, 'PERSISTED');
      const healthy = await target.get('/health');
      expect(healthy.status).toBe(200);
      expect(healthy.body.details.database.status).toBe('up');
      expect(healthy.body.details.spool.status).toBe('down');

      const holder = await lockDatabase(dataDir);
      const locked = numbered('locked', cap + 3);
      const lockedIds = await appendAll(target, SESSION, locked, 'BUFFERED');
      const evicted = locked.length - cap;
      const dropLines = await dropWarnings(target, SESSION, cap, evicted);
      lockedIds.slice(0, evicted).forEach((id, index) => {
        expect(dropLines[index]).toContain(`lost message ${id}`);
      });
      const metrics = await target.get('/metrics');
      expect(metricValue(metrics.text, 'scribe_messages_dropped_total')).toBe(evicted);
      expect(metricValue(metrics.text, 'scribe_pending_messages')).toBe(cap);

      const unhealthy = await target.get('/health');
      expect(unhealthy.status).toBe(503);
      expect(unhealthy.body.details.database.status).toBe('down');
      expect(unhealthy.body.details.spool.status).toBe('down');

      // The ones still held are stored once the lock is gone.
      await holder.release();
      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.contents).toEqual([...before, ...locked.slice(evicted)]);
      });
    },
  );
});
