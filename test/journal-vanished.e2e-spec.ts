import { readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseSegmentName } from '../src/spool/segment-names.js';
import {
  appendMessage,
  eventually,
  occurrences,
  readJournal,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import { journalSuite, spoolStatusOf } from './support/journal-suite.js';
import { type ServerProcess } from './support/server-process.js';

// Finding 2 of issue 19: the active journal segment (or the whole spool directory) removed
// under a running instance, during a database outage (the SQLite write lock held by another
// process), with appends going on. Every QUEUED answer must be a synced line of a segment that
// is on disk, and survive a kill -9 and a restart.
const TEST_TIMEOUT_MS = 60_000;
const SESSIONS = ['vanish-a', 'vanish-b'];
const VANISHED = 'writable messages lostRecords';

const { faultTest, dataDirectory, server, lockDatabase } = journalSuite(TEST_TIMEOUT_MS);

interface Answer {
  sessionId: string;
  content: string;
  status: AppendStatus;
  id: string;
}

/** `count` appends per session, the sessions side by side (a batch may hold several). */
async function appendRound(
  target: ServerProcess,
  label: string,
  count: number,
  answers: Answer[],
): Promise<Answer[]> {
  const round: Answer[] = [];
  await Promise.all(
    SESSIONS.map(async (sessionId) => {
      for (let number = 1; number <= count; number++) {
        const content = `${sessionId}-${label}-${number}`;
        const { status, id } = await appendMessage(target, sessionId, content);
        round.push({ sessionId, content, status, id });
      }
    }),
  );
  answers.push(...round);
  return round;
}

async function segmentsIn(spoolDir: string): Promise<string[]> {
  return (await readdir(spoolDir)).filter((name) => parseSegmentName(name) !== null).sort();
}

/** Every answer QUEUED so far is a line of a segment on disk now. */
async function expectQueuedOnDisk(spoolDir: string, answers: readonly Answer[]): Promise<void> {
  const onDisk = new Set((await readJournal(spoolDir)).map((line) => line.id));
  const missing = answers
    .filter((answer) => answer.status === 'QUEUED' && !onDisk.has(answer.id))
    .map((answer) => answer.content);
  expect({ missing }).toEqual({ missing: [] });
}

/** After a kill -9 and a restart: every PERSISTED or QUEUED answer is stored, in order, once. */
async function expectDurable(target: ServerProcess, answers: readonly Answer[]): Promise<void> {
  for (const sessionId of SESSIONS) {
    const sent = answers.filter((answer) => answer.sessionId === sessionId);
    const stored = await readTranscript(target, sessionId);
    const promised = sent.filter((answer) => answer.status !== 'BUFFERED');
    expect({
      sessionId,
      missing: promised.filter((answer) => !stored.ids.includes(answer.id)).map((a) => a.content),
    }).toEqual({ sessionId, missing: [] });
    const positions = stored.ids.map((id) => sent.findIndex((answer) => answer.id === id));
    expect(positions).toEqual([...new Set(positions)].sort((left, right) => left - right));
  }
}

/**
 * Starts a server, stores one message per session, takes the database's write lock and
 * journals a first round; then `remove` takes files away under it and a second round goes on.
 */
async function removeUnderLoad(
  remove: (spoolDir: string, segments: string[]) => Promise<void>,
  env: Record<string, string> = {},
) {
  const dataDir = await dataDirectory();
  const spoolDir = join(dataDir, 'pending_messages');
  const serverEnv = { DATA_DIR: dataDir, DB_RETRY_INTERVAL_MS: '200', ...env };
  const target = await server(serverEnv);
  const answers: Answer[] = [];
  expect((await appendRound(target, 'stored', 1, answers)).map((a) => a.status)).toEqual([
    'PERSISTED',
    'PERSISTED',
  ]);
  const holder = await lockDatabase(dataDir);
  const first = await appendRound(target, 'before', 3, answers);
  expect(first.every((answer) => answer.status === 'QUEUED')).toBe(true);
  const segments = await segmentsIn(spoolDir);
  expect(segments).toHaveLength(1);

  await remove(spoolDir, segments);
  const after = await appendRound(target, 'after', 5, answers);
  return { target, holder, spoolDir, serverEnv, answers, after, segment: segments[0] };
}

describe('a journal segment or the spool directory removed under a running instance', () => {
  faultTest(
    'the active segment deleted during an outage: the next batch is answered BUFFERED, what memory held is journaled again, every QUEUED answer is on disk and survives kill -9',
    async () => {
      const { target, holder, spoolDir, serverEnv, answers, after, segment } =
        await removeUnderLoad((spoolDir, [active]) => unlink(join(spoolDir, active)));

      // Pins: the batch that finds its segment gone is not written (BUFFERED), and the next
      // one begins a new segment (QUEUED again).
      expect(after.filter((answer) => answer.status === 'BUFFERED').length).toBeGreaterThan(0);
      expect(after.filter((answer) => answer.status === 'QUEUED').length).toBeGreaterThan(0);
      await expectQueuedOnDisk(spoolDir, answers);
      expect(await segmentsIn(spoolDir)).not.toContain(segment);
      // Both lines go out with the answers above, on pipes those can overtake: waited for.
      await target.waitForOutput(
        `segment ${spoolDir}/${segment} was deleted under the running instance`,
      );
      await target.waitForOutput(/6 record\(s\) journaled again into segment/);
      expect(
        occurrences(
          target.output(),
          `segment ${spoolDir}/${segment} was deleted under the running instance`,
        ),
      ).toBe(1);
      // Memory only until the new segment holds them, and said so only once it does.
      expect(target.output()).toContain(
        '6 record(s) still in memory are BUFFERED (memory only) until a new segment can take them',
      );
      expect(occurrences(target.output(), /6 record\(s\) journaled again into segment/)).toBe(1);
      // Nothing was journal-only (no cap reached): nothing is lost.
      await eventually(async () =>
        expect(await spoolStatusOf(target, VANISHED)).toMatchObject({
          writable: true,
          lostRecords: 0,
        }),
      );
      const health = await target.get('/health');
      expect({ http: health.status, spool: health.body.details.spool.status }).toEqual({
        http: 200,
        spool: 'up',
      });

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await holder.release();
      const restarted = await server(serverEnv);
      await expectDurable(restarted, answers);
    },
  );

  faultTest(
    'the whole spool directory removed during an outage: a new directory, owner lock and segment are begun, and every QUEUED answer survives kill -9',
    async () => {
      const { target, holder, spoolDir, serverEnv, answers, after } = await removeUnderLoad(
        (spoolDir) => rm(spoolDir, { recursive: true, force: true }),
      );

      expect(after.filter((answer) => answer.status === 'BUFFERED').length).toBeGreaterThan(0);
      expect(after.filter((answer) => answer.status === 'QUEUED').length).toBeGreaterThan(0);
      await expectQueuedOnDisk(spoolDir, answers);
      const names = await readdir(spoolDir);
      expect(names.filter((name) => /^owner-[0-9a-f]{8}\.lock$/.test(name))).toHaveLength(1);
      // Logged as the lock is taken again, on a pipe the answers above can overtake.
      await target.waitForOutput(/owner-[0-9a-f]{8}\.lock vanished or was replaced/);

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await holder.release();
      const restarted = await server(serverEnv);
      await expectDurable(restarted, answers);
    },
  );

  faultTest(
    'records only the deleted segment held are counted as lost in spoolStatus and logged at ERROR once',
    async () => {
      // A cap of 1: of each session's 3 QUEUED messages, 2 left memory before the deletion.
      const { target } = await removeUnderLoad(
        (spoolDir, [active]) => unlink(join(spoolDir, active)),
        { MAX_PENDING_PER_SESSION: '1' },
      );

      expect(await spoolStatusOf(target, VANISHED)).toMatchObject({ lostRecords: 4 });
      // Logged as the loss is counted, on a pipe the answers above can overtake: waited for.
      await target.waitForOutput(/ERROR.*4 record\(s\) only it held are LOST/);
      expect(occurrences(target.output(), /ERROR.*4 record\(s\) only it held are LOST/)).toBe(1);
    },
  );
});
