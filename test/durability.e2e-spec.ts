import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import {
  faultSuite,
  appendMessage,
  eventually,
  holdSqliteLock,
  metricValue,
  occurrences,
  readSpool,
  readTranscript,
} from './support/fault-helpers.js';
import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';

// Real processes, real faults: the server is the built dist/main.js, the database lock is held
// by another process, the spool is a real directory. Each test cleans up in afterEach.
const TEST_TIMEOUT_MS = 30_000;
const CAP = 4;
const SESSION = 'outage';

const { cleanups, faultTest } = faultSuite(TEST_TIMEOUT_MS);

async function dataDirectory(): Promise<string> {
  const dataDir = await temporaryDataDir();
  cleanups.add(dataDir.remove);
  return dataDir.path;
}

async function server(env: Record<string, string>): Promise<ServerProcess> {
  const started = await startServer(env);
  // SIGKILL only reaches a server the test did not stop itself.
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

async function lockDatabase(dataDir: string) {
  const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
  cleanups.add(() => holder.kill());
  return holder;
}

/** Appends `contents` one after the other, expecting `status` for each; returns the ids. */
async function appendAll(
  target: ServerProcess,
  sessionId: string,
  contents: string[],
  status: 'PERSISTED' | 'QUEUED',
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
 * write lock taken by another process and CAP + 3 appends answered QUEUED, the 3 oldest of
 * them spooled to disk. Checks everything observable about that state.
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

  // The 3 oldest queued messages went to the spool, in drop order; the newest CAP wait in memory.
  const spooled = await readSpool(spoolDir);
  expect(spooled.map((file) => [file.reason, file.sessionId, file.id, file.content])).toEqual(
    locked
      .slice(0, 3)
      .map((content, index) => ['transcript_cap_drop', SESSION, lockedIds[index], content]),
  );
  expect(occurrences(target.output(), 'spooled oldest message')).toBe(3);
  expect(target.output()).toContain(`spooled oldest message ${lockedIds[0]} to ${spoolDir}`);

  const health = await target.get('/health');
  expect(health.status).toBe(200);
  expect(health.body.status).toBe('degraded');
  expect(health.body.details.database.status).toBe('down');
  expect(health.body.details.spool.status).toBe('up');

  // Reads still work under the lock (WAL) and show only what is stored: the backlog is not.
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
        expect(await readSpool(spoolDir)).toEqual([]);
      });
      expect(target.output()).toMatch(/Database writable again; flushing \d+ pending message/);
      const metrics = await target.get('/metrics');
      expect(metricValue(metrics.text, 'scribe_pending_messages')).toBe(0);
      expect(metricValue(metrics.text, 'scribe_spool_files')).toBe(0);
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

      // The append flushed the backlog and drained the spool before it answered.
      const stored = await readTranscript(target, SESSION);
      expect(stored.contents).toEqual([...sent, 'after-release']);
      expect(stored.ids).toEqual([...ids, after.id]);
      expect(stored.messageCount).toBe(sent.length + 1);
      expect(await readSpool(spoolDir)).toEqual([]);
    },
  );

  faultTest(
    'SIGTERM during the outage spools the backlog with reason shutdown, and the next start replays it all in send order',
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
        `Shutdown: spooled ${CAP} pending message(s) to ${spoolDir}`,
      );
      // Everything not stored is on disk now, in drop order, which here is send order.
      const spooled = await readSpool(spoolDir);
      const lockedCount = CAP + 3;
      expect(spooled.map((file) => file.id)).toEqual(ids.slice(-lockedCount));
      expect(spooled.map((file) => file.reason)).toEqual([
        ...Array<string>(3).fill('transcript_cap_drop'),
        ...Array<string>(CAP).fill('shutdown'),
      ]);

      await holder.release();
      const restarted = await server(env);
      expect(restarted.output()).toMatch(/Boot replay stored .*1 session/);
      await eventually(async () => {
        const stored = await readTranscript(restarted, SESSION);
        expect(stored.contents).toEqual(sent);
        expect(stored.ids).toEqual(ids);
        expect(stored.messageCount).toBe(sent.length);
        expect(await readSpool(spoolDir)).toEqual([]);
      });
    },
  );
});

describe('an unusable on-disk spool', () => {
  faultTest(
    'starts and serves appends, reports spool down, drops and counts evictions during a lock, and answers 503 when neither can take a write',
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
      const lockedIds = await appendAll(target, SESSION, locked, 'QUEUED');
      const evicted = locked.length - cap;
      const dropLines = target
        .output()
        .split('\n')
        .filter(
          (line) =>
            line.includes('on-disk spool unavailable') && line.includes('dropped oldest message'),
        );
      expect(dropLines).toHaveLength(evicted);
      lockedIds.slice(0, evicted).forEach((id, index) => {
        expect(dropLines[index]).toContain(`dropped oldest message ${id}`);
      });
      const metrics = await target.get('/metrics');
      expect(metricValue(metrics.text, 'scribe_messages_dropped_total')).toBe(evicted);

      const unhealthy = await target.get('/health');
      expect(unhealthy.status).toBe(503);
      expect(unhealthy.body.details.database.status).toBe('down');
      expect(unhealthy.body.details.spool.status).toBe('down');

      // The ones that fit under the cap are still owed, and stored once the lock is gone.
      await holder.release();
      await eventually(async () => {
        const stored = await readTranscript(target, SESSION);
        expect(stored.contents).toEqual([...before, ...locked.slice(evicted)]);
      });
    },
  );
});

// Hand-written in the on-disk format of src/spool/spool-directory.ts.
function spoolFile(
  sessionId: string,
  reason: string,
  ms: number,
  seq: number,
  message: { id: string; content: string; orderKey: string },
): string {
  return JSON.stringify({
    session_key: sessionId,
    reason,
    ts: ms,
    seq,
    data: {
      session_id: sessionId,
      message: {
        id: message.id,
        role: 'USER',
        content: message.content,
        clientMessageId: null,
        toolName: null,
        toolCallId: null,
        toolCalls: null,
        metadata: null,
        acceptedAt: ms,
        orderKey: message.orderKey,
      },
    },
  });
}

function orderKey(ms: number, counter: number): string {
  return `${String(ms).padStart(15, '0')}.${String(counter).padStart(6, '0')}.0badc0de`;
}

describe.each(databaseKinds())('the spool found at start on %s', (database) => {
  faultTest(
    'replays the valid files in order, sets corrupt and truncated ones aside as .bad, and leaves foreign files alone',
    async () => {
      const dataDir = await dataDirectory();
      const postgres = database === 'postgres' ? await createPostgresSchema() : undefined;
      if (postgres) cleanups.add(postgres.drop);
      const spoolDir = join(dataDir, 'pending_messages');
      await mkdir(spoolDir, { recursive: true, mode: 0o700 });

      const sessionId = 'replayed';
      const ms = Date.now() - 60_000;
      const first = { id: randomUUID(), content: 'spooled first', orderKey: orderKey(ms, 0) };
      const second = { id: randomUUID(), content: 'spooled second', orderKey: orderKey(ms, 1) };
      const foreign = { id: randomUUID(), content: 'not ours', orderKey: orderKey(ms, 2) };
      const truncatedSource = spoolFile(sessionId, 'transcript_cap_drop', ms, 3, {
        id: randomUUID(),
        content: 'cut short',
        orderKey: orderKey(ms, 3),
      });
      const files: Record<string, string> = {
        'pending-0001.json': '{not json',
        [`pending-${first.orderKey}.json`]: spoolFile(
          sessionId,
          'transcript_cap_drop',
          ms,
          1,
          first,
        ),
        [`pending-${second.orderKey}.json`]: spoolFile(sessionId, 'shutdown', ms, 2, second),
        [`pending-${foreign.orderKey}.json`]: spoolFile(
          sessionId,
          'something_else',
          ms,
          4,
          foreign,
        ),
        [`pending-${orderKey(ms, 3)}.json`]: truncatedSource.slice(0, truncatedSource.length / 2),
        'notes.txt': 'operator notes, not a spool file\n',
      };
      for (const [name, text] of Object.entries(files)) {
        await writeFile(join(spoolDir, name), text, { mode: 0o600 });
      }

      const target = await server({
        DATA_DIR: dataDir,
        ...(postgres ? { DATABASE_URL: postgres.url } : {}),
      });

      await eventually(async () => {
        const stored = await readTranscript(target, sessionId);
        expect(stored.contents).toEqual([first.content, second.content]);
        expect(stored.ids).toEqual([first.id, second.id]);
        expect(stored.messageCount).toBe(2);
      });

      const truncatedName = `pending-${orderKey(ms, 3)}.json`;
      const foreignName = `pending-${foreign.orderKey}.json`;
      expect((await readdir(spoolDir)).sort()).toEqual(
        ['pending-0001.json.bad', `${truncatedName}.bad`, foreignName, 'notes.txt'].sort(),
      );
      expect(await readFile(join(spoolDir, 'pending-0001.json.bad'), 'utf8')).toBe('{not json');
      expect(await readFile(join(spoolDir, foreignName), 'utf8')).toBe(files[foreignName]);
      expect(await readFile(join(spoolDir, 'notes.txt'), 'utf8')).toBe(files['notes.txt']);

      for (const name of ['pending-0001.json', truncatedName]) {
        expect(target.output()).toMatch(
          new RegExp(`ERROR.*Spool file ${name.replace(/\./g, '\\.')} is unreadable`),
        );
      }
      const metrics = await target.get('/metrics');
      expect(metricValue(metrics.text, 'scribe_spool_bad_files_total')).toBe(2);
    },
  );
});
