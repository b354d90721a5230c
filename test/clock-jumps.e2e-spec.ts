import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatOrderKey } from '../src/message/order-key.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { encodeJournalLine } from '../src/spool/journal-codec.js';
import { SET_ASIDE_LOG, formatSegmentName } from '../src/spool/segment-names.js';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import {
  appendMessage,
  eventually,
  faultSuite,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import { fakeClockEnv } from './support/faketime.js';
import { startServer, type ServerProcess } from './support/server-process.js';

// The server's clock jumps under libfaketime: a test steps it by writing the file fakeClockEnv
// points it at.
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const DEFAULTS = { ADMIN_TOKEN: 'root', DB_RETRY_INTERVAL_MS: '200' };
const { cleanups, faultTest, dataDirectory, lockDatabase } = faultSuite(120_000);

/** The built server with the suite's settings; a start may take long on a busy machine. */
async function server(env: Record<string, string>): Promise<ServerProcess> {
  const started = await startServer({ ...DEFAULTS, ...env }, { readyTimeoutMs: 60_000 });
  cleanups.showOnFailure(`server pid ${started.child.pid}`, () => started.output());
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

const ADMIN = { authorization: 'Bearer root' };
const DELETE = `mutation($id: ID!) { deleteSession(id: $id) { deleted } }`;
const TIMES = `query($id: ID!) {
  session(id: $id) { messages(first: 100) { edges { node { content createdAt status } } } }
}`;

/** A server whose wall clock is off by what `clockFile` says (`+1h`, `-2h`, `+0`). */
function fakedServer(clockFile: string, env: Record<string, string>): Promise<ServerProcess> {
  return server({ ...fakeClockEnv({ file: clockFile }), ...env });
}

async function clock(dataDir: string, offset: string): Promise<string> {
  const file = join(dataDir, 'faketime');
  await writeFile(file, `${offset}\n`);
  return file;
}

async function appendAll(
  target: ServerProcess,
  sessionId: string,
  contents: string[],
  expected: AppendStatus,
): Promise<void> {
  for (const content of contents) {
    expect((await appendMessage(target, sessionId, content)).status).toBe(expected);
  }
}

async function deleteSession(target: ServerProcess, sessionId: string): Promise<void> {
  const answer = await target.gql(DELETE, { id: sessionId }, ADMIN);
  expect(answer.data?.deleteSession).toEqual({ deleted: true });
}

const queued = ['q1', 'q2', 'q3', 'q4', 'q5'];

describe('a deletion made while the clock was ahead (SQLite, libfaketime)', () => {
  faultTest(
    'keeps every message QUEUED after it once the clock is right again, after a restart',
    async () => {
      const dataDir = await dataDirectory();
      const clockFile = await clock(dataDir, '+1h');
      const ahead = await fakedServer(clockFile, { DATA_DIR: dataDir });
      await appendAll(ahead, 'jump', ['before'], 'PERSISTED');
      await deleteSession(ahead, 'jump');
      await ahead.stop();

      await writeFile(clockFile, '+0\n');
      const right = await fakedServer(clockFile, { DATA_DIR: dataDir });
      const holder = await lockDatabase(dataDir);
      await appendAll(right, 'jump', queued, 'QUEUED');
      await holder.release();

      await eventually(async () => {
        expect((await readTranscript(right, 'jump')).contents).toEqual(queued);
      }, 15_000);
    },
  );

  faultTest('keeps them when the clock of a running server is stepped back', async () => {
    const dataDir = await dataDirectory();
    const clockFile = await clock(dataDir, '+1h');
    const sut = await fakedServer(clockFile, { DATA_DIR: dataDir });
    await appendAll(sut, 'stepped', ['before'], 'PERSISTED');
    await deleteSession(sut, 'stepped');

    await writeFile(clockFile, '+0\n');
    const holder = await lockDatabase(dataDir);
    await appendAll(sut, 'stepped', queued, 'QUEUED');
    await holder.release();

    await eventually(async () => {
      expect((await readTranscript(sut, 'stepped')).contents).toEqual(queued);
    }, 15_000);
  });
});

describe.each(databaseKinds())('a run whose clock was off, then one that is right (%s)', (kind) => {
  it.each([
    ['30 days ahead, then right', '+30d', '+0'],
    ['right, then 2 hours behind', '+0', '-2h'],
  ])(
    '%s: every message reads back in acceptance order',
    (_case, first, second) =>
      cleanups.guard(async () => {
        const dataDir = await dataDirectory();
        const env: Record<string, string> = { DATA_DIR: dataDir };
        if (kind === 'postgres') {
          const schema = await createPostgresSchema();
          cleanups.add(schema.drop);
          env.DATABASE_URL = schema.url;
        }
        const clockFile = await clock(dataDir, first);
        const earlier = await fakedServer(clockFile, env);
        await appendAll(earlier, 'order', ['a1', 'a2', 'a3', 'a4'], 'PERSISTED');
        await earlier.stop();

        await writeFile(clockFile, `${second}\n`);
        const later = await fakedServer(clockFile, env);
        await appendAll(later, 'order', ['b1', 'b2', 'b3', 'b4'], 'PERSISTED');

        expect((await readTranscript(later, 'order')).contents).toEqual([
          'a1',
          'a2',
          'a3',
          'a4',
          'b1',
          'b2',
          'b3',
          'b4',
        ]);
      }),
    120_000,
  );
});

describe('a journal record dated 10 years ahead (SQLite)', () => {
  faultTest(
    'is set aside with its record and reason, leaves later times alone, and a deletion then a kill -9 bring nothing back',
    async () => {
      const dataDir = await dataDirectory();
      const spoolDir = join(dataDir, 'pending_messages');
      await mkdir(spoolDir, { recursive: true, mode: 0o700 });
      const now = Date.now();
      const past = acceptedRecord('future', 'a minute ago', {
        acceptedAt: now - 60_000,
        orderKey: formatOrderKey(now - 60_000, 0, 'deadbeef'),
      });
      const tenYears = now + 3650 * DAY;
      const future = acceptedRecord('future', 'from 2036', {
        acceptedAt: tenYears,
        orderKey: formatOrderKey(tenYears, 0, 'deadbeef'),
      });
      await writeFile(
        join(spoolDir, formatSegmentName(now - 60_000, 0, 'deadbeef')),
        Buffer.concat([encodeJournalLine(past), encodeJournalLine(future)]),
        { mode: 0o600 },
      );

      const first = await server({ DATA_DIR: dataDir });
      await first.waitForOutput(/Boot replay stored 1 journaled message/);
      const setAside = (await readFile(join(spoolDir, SET_ASIDE_LOG), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(setAside).toEqual([
        expect.objectContaining({
          messageId: future.id,
          sessionId: 'future',
          reason: expect.stringMatching(/^accepted at 20\d\d-.*JOURNAL_MAX_CLOCK_AHEAD_MS/),
          record: expect.objectContaining({ content: 'from 2036', acceptedAt: tenYears }),
        }),
      ]);

      const holder = await lockDatabase(dataDir);
      await appendAll(first, 'future', ['n1', 'n2', 'n3', 'n4'], 'QUEUED');
      await holder.release();
      await eventually(async () => {
        expect((await readTranscript(first, 'future')).contents).toEqual([
          'a minute ago',
          'n1',
          'n2',
          'n3',
          'n4',
        ]);
      }, 15_000);
      const times = (await first.gql(TIMES, { id: 'future' })).data.session.messages.edges.map(
        (edge: any) => Date.parse(edge.node.createdAt),
      );
      for (const time of times) expect(Math.abs(time - Date.now())).toBeLessThan(HOUR);

      // QUEUED again, then deleted, then killed before anything else happens.
      const again = await lockDatabase(dataDir);
      await appendAll(first, 'future', ['d1', 'd2', 'd3', 'd4'], 'QUEUED');
      await again.release();
      await deleteSession(first, 'future');
      expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

      const second = await server({ DATA_DIR: dataDir });
      expect(await readTranscript(second, 'future')).toEqual({
        messageCount: null,
        ids: [],
        contents: [],
      });
    },
  );
});
