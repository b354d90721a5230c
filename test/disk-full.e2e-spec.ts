import { rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
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
import { health } from './support/health.js';
import { type ServerProcess } from './support/server-process.js';
import { Filler, mountTmpfs, type Tmpfs } from './support/tmpfs.js';

// Real disks that fill: the data directory (or only the spool) on a tmpfs of a few MiB, filled
// by a file grown with dd; a database file deleted or replaced under the running server. The
// server is the built dist/main.js; every answer it gives is kept and checked against what is
// stored afterwards, including after a kill -9 and a restart.
const TEST_TIMEOUT_MS = 60_000;
const KIB = 1024;
const MIB = 1024 * KIB;
// Big messages fill the disk in a few dozen appends; each is close to MAX_MESSAGE_BYTES.
const MAX_MESSAGE_BYTES = 20_000;
const CONTENT_BYTES = 16_000;
const ADMIN = { authorization: 'Bearer t' };
// Messages held in memory on a full disk, and the space given back for them (see the test).
const HELD = 12;
const SPARE_BYTES = 330 * KIB;

// No session cache where reads are checked: every read is the database's own word.
const { cleanups, faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS, {
  ADMIN_TOKEN: 't',
  SESSION_CACHE_SIZE: '0',
});

async function tmpfs(sizeBytes: number): Promise<Tmpfs> {
  const disk = await mountTmpfs(sizeBytes);
  // Registered before the servers, so it runs after they are stopped.
  cleanups.add(() => disk.unmount());
  return disk;
}

/** Database and journal on `disk`, with a background retry and room for every held message. */
function onDisk(disk: Tmpfs): Record<string, string> {
  return {
    DATA_DIR: disk.path,
    DB_RETRY_INTERVAL_MS: '200',
    MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
    // High enough that nothing held is ever dropped: every answer must end up stored.
    MAX_PENDING_PER_SESSION: '1000',
  };
}

/** A message of about CONTENT_BYTES whose first characters say which one it is. */
function bigContent(label: string): string {
  return `${label}:`.padEnd(CONTENT_BYTES, '.');
}

/** The label of a bigContent(), for messages in failures. */
function labelOf(content: string): string {
  return content.slice(0, content.indexOf(':'));
}

async function admin(target: ServerProcess, query: string): Promise<any> {
  const response = await target.gql(query, {}, ADMIN);
  if (response.errors) throw new Error(`admin query failed: ${JSON.stringify(response.errors)}`);
  return response.data;
}

interface Answer {
  sessionId: string;
  content: string;
  status: AppendStatus;
  id: string;
}

/** Appends one big message and keeps the answer. */
async function appendBig(
  target: ServerProcess,
  sessionId: string,
  label: string,
  answers: Answer[],
): Promise<Answer> {
  const content = bigContent(label);
  const { status, id } = await appendMessage(target, sessionId, content);
  const answer = { sessionId, content, status, id };
  answers.push(answer);
  return answer;
}

/**
 * One client per session appending big messages back to back until stopped, keeping every
 * answer in the order given. An append that fails (a GraphQL error) stops the load and fails
 * the test with it.
 */
class AppendLoad {
  readonly answers: Answer[] = [];
  private stopped = false;
  private failure: Error | undefined;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly target: ServerProcess,
    sessions: readonly string[],
  ) {
    this.loops = sessions.map((sessionId) => this.run(sessionId));
  }

  /** Waits (bounded) until `condition` holds for the answers so far. */
  until(condition: (answers: readonly Answer[]) => boolean, timeoutMs = 15_000): Promise<void> {
    return eventually(() => {
      if (this.failure) throw this.failure;
      if (!condition(this.answers)) {
        throw new Error(`not yet, after ${this.answers.length} answers: ${summary(this.answers)}`);
      }
    }, timeoutMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    if (this.failure) throw this.failure;
  }

  private async run(sessionId: string): Promise<void> {
    try {
      for (let number = 1; !this.stopped; number++) {
        await appendBig(this.target, sessionId, `${sessionId}-${number}`, this.answers);
      }
    } catch (error) {
      this.failure ??= error instanceof Error ? error : new Error(String(error));
      this.stopped = true;
    }
  }
}

function summary(answers: readonly Answer[]): string {
  return answers.map((answer) => `${labelOf(answer.content)}=${answer.status}`).join(' ');
}

function ofSession(answers: readonly Answer[], sessionId: string): Answer[] {
  return answers.filter((answer) => answer.sessionId === sessionId);
}

/** Every session's stored transcript is exactly what it was answered, in answer order, once. */
async function expectAllStored(
  target: ServerProcess,
  answers: readonly Answer[],
  sessions: readonly string[],
): Promise<void> {
  for (const sessionId of sessions) {
    const expected = ofSession(answers, sessionId);
    const stored = await readTranscript(target, sessionId);
    expect({ sessionId, labels: stored.contents.map(labelOf) }).toEqual({
      sessionId,
      labels: expected.map((answer) => labelOf(answer.content)),
    });
    expect(stored.ids).toEqual(expected.map((answer) => answer.id));
    expect(stored.contents).toEqual(expected.map((answer) => answer.content));
    expect(stored.messageCount).toBe(expected.length);
  }
}

/**
 * Fills `disk` while one client per session appends big messages: a filler takes most of the
 * disk first (so that deleting it gives back far more than the held messages need), then grows
 * a step at a time between answers until dd hits ENOSPC; the appends go on until every session
 * was answered BUFFERED (neither the database nor the journal could take it) twice.
 */
async function fillWhileAppending(
  target: ServerProcess,
  disk: Tmpfs,
  sessions: readonly string[],
): Promise<{ filler: Filler; answers: Answer[] }> {
  const filler = new Filler(join(disk.path, 'filler'));
  await filler.grow((await disk.freeBytes()) - 768 * KIB);
  const load = new AppendLoad(target, sessions);
  cleanups.add(() => load.stop().catch(() => undefined));
  for (;;) {
    const seen = load.answers.length;
    if ((await filler.grow(64 * KIB)) === 'full') break;
    await load.until((answers) => answers.length >= seen + sessions.length);
  }
  await load.until((answers) =>
    sessions.every(
      (sessionId) =>
        ofSession(answers, sessionId).filter((answer) => answer.status === 'BUFFERED').length >= 2,
    ),
  );
  await load.stop();
  // Some were stored before the disk filled: the test covers both sides of it.
  expect(load.answers.filter((answer) => answer.status === 'PERSISTED').length).toBeGreaterThan(0);
  return { filler, answers: load.answers };
}

/**
 * What a session's stored transcript may be after a kill -9: every message answered PERSISTED
 * or QUEUED, in answer order, once; a BUFFERED one (memory only) may be missing.
 */
async function expectDurableStored(
  target: ServerProcess,
  answers: readonly Answer[],
  sessions: readonly string[],
): Promise<void> {
  for (const sessionId of sessions) {
    const sent = ofSession(answers, sessionId);
    const stored = await readTranscript(target, sessionId);
    // In answer order, and nothing twice: a subsequence of what was answered.
    const positions = stored.ids.map((id) => sent.findIndex((answer) => answer.id === id));
    expect({ sessionId, positions }).toEqual({
      sessionId,
      positions: [...new Set(positions)].filter((position) => position >= 0).sort((a, b) => a - b),
    });
    const promised = sent.filter((answer) => answer.status !== 'BUFFERED');
    expect({
      sessionId,
      missing: promised.filter((answer) => !stored.ids.includes(answer.id)),
    }).toEqual({ sessionId, missing: [] });
    expect(stored.messageCount).toBe(stored.ids.length);
  }
}

describe('the data directory on a disk that fills up (database and journal on one tmpfs)', () => {
  const SESSIONS = ['full-a', 'full-b', 'full-c'];

  faultTest(
    'while it fills PERSISTED answers are true and health turns 503; once space is back the background retry stores every held message in order, once, and a kill -9 and restart lose nothing answered PERSISTED',
    async () => {
      const disk = await tmpfs(8 * MIB);
      const env = onDisk(disk);
      const target = await server(env);
      expect(await health(target)).toEqual({
        http: 200,
        status: 'ok',
        database: 'up',
        spool: 'up',
      });

      const { filler, answers } = await fillWhileAppending(target, disk, SESSIONS);

      // Whatever the background retry could still store meanwhile, the filler takes the space
      // it freed; once nothing can be written anywhere, /health says so (pins: 503 only when
      // neither the database nor the spool can take a write; the probe is a real commit).
      await eventually(async () => {
        await filler.grow();
        expect(await health(target)).toEqual({
          http: 503,
          status: 'error',
          database: 'down',
          spool: 'down',
        });
      }, 15_000);
      // Appends on the full disk are held in memory only, and say so; health stays 503.
      for (const sessionId of SESSIONS) {
        const answer = await appendBig(target, sessionId, `${sessionId}-full`, answers);
        expect({ sessionId, status: answer.status }).toEqual({ sessionId, status: 'BUFFERED' });
      }
      expect(await health(target)).toEqual({
        http: 503,
        status: 'error',
        database: 'down',
        spool: 'down',
      });
      const spool = await admin(target, '{ spoolStatus { writable } }');
      expect(spool.spoolStatus.writable).toBe(false);
      const fullMetrics = (await target.get('/metrics')).text;
      expect(metricValue(fullMetrics, 'scribe_spool_write_failures_total')).toBeGreaterThan(0);
      expect(metricValue(fullMetrics, 'scribe_db_write_failures_total')).toBeGreaterThan(0);

      // Reads still work, and show for each session a prefix of what it was answered that
      // holds every PERSISTED message (pins: PERSISTED means committed; order per session).
      for (const sessionId of SESSIONS) {
        const expected = ofSession(answers, sessionId);
        const stored = await readTranscript(target, sessionId);
        expect(stored.ids).toEqual(expected.slice(0, stored.ids.length).map((answer) => answer.id));
        const persisted = expected.filter((answer) => answer.status === 'PERSISTED');
        expect(stored.ids).toEqual(expect.arrayContaining(persisted.map((answer) => answer.id)));
      }

      // Space comes back: no append, no restart; the background retry journals and stores
      // everything held (pins: the retry probes, journals what the disk refused, writes back).
      await filler.remove();
      await eventually(async () => {
        expect(await health(target)).toEqual({
          http: 200,
          status: 'ok',
          database: 'up',
          spool: 'up',
        });
        await expectAllStored(target, answers, SESSIONS);
        const status = await admin(
          target,
          '{ pendingStatus { totalPending } spoolStatus { messages } }',
        );
        expect(status).toEqual({
          pendingStatus: { totalPending: 0 },
          spoolStatus: { messages: 0 },
        });
      }, 20_000);
      const metrics = (await target.get('/metrics')).text;
      expect(metricValue(metrics, 'scribe_messages_dropped_total')).toBe(0);
      expect(occurrences(target.output(), 'dropping oldest message')).toBe(0);

      // Writes committed after the failed ones are real commits (pins: the write connection
      // is reopened after SQLITE_FULL, never left inside a transaction that never commits).
      for (const sessionId of SESSIONS) {
        const answer = await appendBig(target, sessionId, `${sessionId}-after`, answers);
        expect({ sessionId, status: answer.status }).toEqual({ sessionId, status: 'PERSISTED' });
      }
      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      const restarted = await server(env);
      await expectAllStored(restarted, answers, SESSIONS);
    },
  );

  faultTest(
    'a kill -9 on the full disk, then space freed and a restart on the same tmpfs: every message answered PERSISTED or QUEUED is stored, in order, once',
    async () => {
      const disk = await tmpfs(8 * MIB);
      const env = onDisk(disk);
      const target = await server(env);
      const { filler, answers } = await fillWhileAppending(target, disk, SESSIONS);

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await filler.remove();
      const restarted = await server(env);
      // Pins: PERSISTED is a commit on the write connection (a kill loses none); QUEUED is a
      // synced journal line, replayed at start; BUFFERED alone promised nothing.
      await expectDurableStored(restarted, answers, SESSIONS);
      expect(restarted.output()).not.toMatch(/Set aside/);
      const after = await appendBig(restarted, SESSIONS[0], 'after-restart', answers);
      expect(after.status).toBe('PERSISTED');
    },
  );

  faultTest(
    'space given back that holds the held messages is enough: the write-back is not starved by journal copies of them taken first',
    async () => {
      const disk = await tmpfs(8 * MIB);
      const env = onDisk(disk);
      const sessionId = 'spare';
      const target = await server(env);
      const answers: Answer[] = [];
      expect((await appendBig(target, sessionId, 'before', answers)).status).toBe('PERSISTED');

      // Two fillers: a spare one of SPARE bytes, then one that takes everything else.
      const spare = new Filler(join(disk.path, 'spare'));
      const rest = new Filler(join(disk.path, 'rest'));
      expect(await spare.grow(SPARE_BYTES)).toBe('grown');
      expect(await rest.grow()).toBe('full');
      for (let number = 1; number <= HELD; number++) {
        const answer = await appendBig(target, sessionId, `held-${number}`, answers);
        expect({ number, status: answer.status }).toEqual({ number, status: 'BUFFERED' });
      }

      // SPARE_BYTES comes back. Storing the HELD messages in one transaction takes about
      // HELD x 5 WAL frames of 4120 bytes (~230 KiB: each 16 kB row is a leaf cell and three
      // overflow pages); their journal lines take HELD x ~16.3 kB (~196 KiB). The space holds
      // the write-back with ~100 KiB to spare, but not the journal copies and the write-back
      // together. Pins: once space is back every held message is stored (no livelock in which
      // each retry's heartbeat commits and the write-back fails with SQLITE_FULL forever).
      await spare.remove();
      await eventually(async () => {
        await expectAllStored(target, answers, [sessionId]);
        expect(await health(target)).toEqual({
          http: 200,
          status: 'ok',
          database: 'up',
          spool: 'up',
        });
      }, 10_000);
    },
  );

  faultTest(
    'with only the database on the full disk (SPOOL_DIR elsewhere) appends are QUEUED in the journal, health is degraded, and PERSISTED again once space is back',
    async () => {
      const disk = await tmpfs(2 * MIB);
      const spoolDir = join(await dataDirectory(), 'spool');
      const env = {
        DATA_DIR: disk.path,
        SPOOL_DIR: spoolDir,
        DB_RETRY_INTERVAL_MS: '200',
        MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
      };
      const sessionId = 'db-full';
      const target = await server(env);
      const answers: Answer[] = [];
      for (const label of ['before-1', 'before-2']) {
        expect((await appendBig(target, sessionId, label, answers)).status).toBe('PERSISTED');
      }

      const filler = new Filler(join(disk.path, 'filler'));
      expect(await filler.grow()).toBe('full');
      const queued: Answer[] = [];
      for (const label of ['full-1', 'full-2', 'full-3', 'full-4']) {
        const answer = await appendBig(target, sessionId, label, answers);
        queued.push(answer);
        // Pins: QUEUED when the database cannot commit and the journal (on another disk) can.
        expect({ label, status: answer.status }).toEqual({ label, status: 'QUEUED' });
      }
      expect(await health(target)).toEqual({
        http: 200,
        status: 'degraded',
        database: 'down',
        spool: 'up',
      });
      // Each QUEUED message is in the journal, synced, in order; none is stored yet.
      expect((await readJournal(spoolDir)).map((line) => line.id)).toEqual(
        queued.map((answer) => answer.id),
      );
      expect((await readTranscript(target, sessionId)).contents.map(labelOf)).toEqual([
        'before-1',
        'before-2',
      ]);

      await filler.remove();
      await eventually(async () => {
        expect(await health(target)).toEqual({
          http: 200,
          status: 'ok',
          database: 'up',
          spool: 'up',
        });
        await expectAllStored(target, answers, [sessionId]);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      }, 15_000);
      for (const label of ['after-1', 'after-2']) {
        expect((await appendBig(target, sessionId, label, answers)).status).toBe('PERSISTED');
      }
      await target.stop('SIGKILL');
      await expectAllStored(await server(env), answers, [sessionId]);
    },
  );
});

describe('the spool on a disk that fills up during a database outage', () => {
  faultTest(
    'answers QUEUED until the spool disk is full, then BUFFERED with drops past the cap counted and health 503; QUEUED again once space is back, and everything still held is stored when the lock goes',
    async () => {
      const cap = 3;
      const dataDir = await dataDirectory();
      const disk = await tmpfs(1 * MIB);
      const spoolDir = join(disk.path, 'spool');
      const sessionId = 'spool-full';
      const target = await server({
        DATA_DIR: dataDir,
        SPOOL_DIR: spoolDir,
        MAX_PENDING_PER_SESSION: String(cap),
        DB_RETRY_INTERVAL_MS: '200',
        MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
      });
      const answers: Answer[] = [];
      for (const label of ['before-1', 'before-2']) {
        expect((await appendBig(target, sessionId, label, answers)).status).toBe('PERSISTED');
      }
      const holder = await lockDatabase(dataDir);

      // Room for about four journal lines is left on the spool's disk.
      const filler = new Filler(join(disk.path, 'filler'));
      const room = 4 * (CONTENT_BYTES + 512) + 2 * KIB;
      await filler.grow((await disk.freeBytes()) - room);
      let buffered = 0;
      for (let number = 1; buffered < cap + 2; number++) {
        const answer = await appendBig(target, sessionId, `locked-${number}`, answers);
        if (answer.status === 'BUFFERED') buffered += 1;
        if (number > 12) throw new Error(`the spool never filled: ${summary(answers)}`);
      }
      // Pins: QUEUED while the journal takes it, BUFFERED from the first line it cannot.
      const locked = answers.slice(2);
      expect(summary(locked)).toMatch(/^(locked-\d+=QUEUED )+(locked-\d+=BUFFERED ?)+$/);
      const firstBuffered = locked.findIndex((answer) => answer.status === 'BUFFERED');
      expect(firstBuffered).toBeGreaterThan(0);

      // Past the cap the oldest BUFFERED ones leave memory with nowhere to go: dropped, each
      // with the reference warning naming it, and counted.
      const dropped = locked.slice(firstBuffered, firstBuffered + buffered - cap);
      const dropLines = await dropWarnings(target, sessionId, cap, dropped.length);
      dropped.forEach((answer, index) =>
        expect(dropLines[index]).toContain(`lost message ${answer.id}`),
      );
      const metrics = (await target.get('/metrics')).text;
      expect(metricValue(metrics, 'scribe_spool_write_failures_total')).toBeGreaterThan(0);
      expect(metricValue(metrics, 'scribe_messages_dropped_total')).toBe(dropped.length);
      expect(metricValue(metrics, 'scribe_pending_messages')).toBe(cap);
      expect(await health(target)).toEqual({
        http: 503,
        status: 'error',
        database: 'down',
        spool: 'down',
      });
      const full = await admin(target, '{ spoolStatus { writable messages } }');
      expect(full.spoolStatus).toEqual({ writable: false, messages: firstBuffered });

      // Space comes back, the lock stays: new appends are journaled again without a restart.
      await filler.remove();
      for (const label of ['freed-1', 'freed-2']) {
        const answer = await appendBig(target, sessionId, label, answers);
        expect({ label, status: answer.status }).toEqual({ label, status: 'QUEUED' });
      }
      expect(await health(target)).toEqual({
        http: 200,
        status: 'degraded',
        database: 'down',
        spool: 'up',
      });
      // Nothing more was lost: what left memory since went to the journal.
      const freedMetrics = (await target.get('/metrics')).text;
      expect(metricValue(freedMetrics, 'scribe_messages_dropped_total')).toBe(dropped.length);

      await holder.release();
      const kept = answers.filter((answer) => !dropped.includes(answer));
      await eventually(async () => {
        await expectAllStored(target, kept, [sessionId]);
        expect((await readJournal(spoolDir)).segments).toEqual([]);
      }, 15_000);
    },
  );
});

/** Copies a consistent snapshot of a live SQLite database to `destination` (VACUUM INTO). */
async function snapshotDatabase(source: string, destination: string): Promise<void> {
  const database = await new Promise<sqlite3.Database>((resolveOpen, rejectOpen) => {
    const opened = new sqlite3.Database(source, sqlite3.OPEN_READONLY, (error) =>
      error ? rejectOpen(error) : resolveOpen(opened),
    );
  });
  try {
    await new Promise<void>((resolveRun, rejectRun) =>
      database.run('VACUUM INTO ?', [destination], (error) =>
        error ? rejectRun(error) : resolveRun(),
      ),
    );
  } finally {
    await new Promise<void>((resolveClose) => database.close(() => resolveClose()));
  }
}

describe('the database file deleted or replaced under a running instance', () => {
  const SESSION = 'file-changed';

  /**
   * Stores two messages, changes the file with `change`, appends three more; checks that no
   * answer claims more than is true and that health says the database is down. Returns the
   * answers after the change.
   */
  async function changeFileUnderServer(
    env: Record<string, string>,
    change: (databaseFile: string) => Promise<void>,
    what: 'deleted' | 'replaced',
  ) {
    const databaseFile = join(env.DATA_DIR, 'scribe.sqlite');
    const target = await server(env);
    const answers: Answer[] = [];
    for (const label of ['before-1', 'before-2']) {
      expect((await appendBig(target, SESSION, label, answers)).status).toBe('PERSISTED');
    }
    await change(databaseFile);
    const after: Answer[] = [];
    for (const label of ['after-1', 'after-2', 'after-3']) {
      after.push(await appendBig(target, SESSION, label, answers));
    }
    await target.waitForOutput(
      new RegExp(`the database file ${databaseFile} was ${what} while open`),
    );
    // Pins: after a commit the file must still be the one opened, else the write failed.
    expect(await health(target)).toEqual({
      http: 200,
      status: 'degraded',
      database: 'down',
      spool: 'up',
    });
    const pending = await admin(target, '{ pendingStatus { databaseWritable } }');
    expect(pending.pendingStatus.databaseWritable).toBe(false);
    return { target, after };
  }

  faultTest(
    'deleted: later appends are not PERSISTED unless stored after a restart, health says database down, and after a kill -9 and restart (a new database) every QUEUED message is stored',
    async () => {
      const env = { DATA_DIR: await dataDirectory(), DB_RETRY_INTERVAL_MS: '200' };
      const { target, after } = await changeFileUnderServer(env, (file) => unlink(file), 'deleted');

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      const restarted = await server(env);
      const stored = await readTranscript(restarted, SESSION);
      // The deleted file took what was stored before; everything answered since is here, in
      // order, once, whatever it was answered (a PERSISTED one too, or the answer was a lie).
      expect(stored.ids).toEqual(after.map((answer) => answer.id));
      expect(stored.contents.map(labelOf)).toEqual(['after-1', 'after-2', 'after-3']);
      expect(stored.messageCount).toBe(3);
    },
  );

  faultTest(
    'replaced by another file (a restored snapshot): later appends are not PERSISTED unless stored after a restart, health says database down, and after a restart every QUEUED message is stored',
    async () => {
      const dataDir = await dataDirectory();
      const env = { DATA_DIR: dataDir, DB_RETRY_INTERVAL_MS: '200' };
      const { target, after } = await changeFileUnderServer(
        env,
        async (file) => {
          const snapshot = join(dataDir, 'snapshot.sqlite');
          await snapshotDatabase(file, snapshot);
          await rename(snapshot, file);
        },
        'replaced',
      );

      expect(await target.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });
      const restarted = await server(env);
      const stored = await readTranscript(restarted, SESSION);
      // The snapshot holds the two stored before; what was answered since follows, once.
      expect(stored.contents.map(labelOf)).toEqual([
        'before-1',
        'before-2',
        'after-1',
        'after-2',
        'after-3',
      ]);
      expect(stored.ids.slice(2)).toEqual(after.map((answer) => answer.id));
      expect(stored.messageCount).toBe(5);
    },
  );
});
