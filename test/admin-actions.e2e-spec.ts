import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { SET_ASIDE_LOG } from '../src/spool/segment-names.js';
import { type SetAsideEntry } from '../src/spool/set-aside-entry.js';
import { APPEND, eventually, faultSuite } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// The operator's actions on what Scribe holds (the admin console's buttons), against the built
// server as a real process: retryNow after a real outage (another process holding the SQLite
// lock), and re-drive and drop of set-aside entries.
const { dataDirectory, faultTest, lockDatabase, server } = faultSuite(45_000, {
  ADMIN_TOKEN: 'root',
  API_TOKENS: 'reader=read+append',
});

const ADMIN = { authorization: 'Bearer root' };
const READER = { authorization: 'Bearer reader' };
const STATUS = `{
  pendingStatus { totalPending }
  spoolStatus { messages setAsideCount setAside { id reason sessionId messageId } }
}`;
const RETRY = 'mutation { retryNow }';
const REDRIVE = `mutation($input: SetAsideActionInput!) {
  reDriveSetAside(input: $input) { id reason sessionId messageId }
}`;
const DROP = `mutation($input: SetAsideActionInput!) {
  dropSetAside(input: $input) { id reason sessionId messageId }
}`;

async function status(target: ServerProcess) {
  const answer = await target.gql(STATUS, {}, ADMIN);
  expect(answer.errors).toBeUndefined();
  return answer.data as {
    pendingStatus: { totalPending: number };
    spoolStatus: {
      messages: number;
      setAsideCount: number;
      setAside: { id: string; reason: string; sessionId: string | null }[];
    };
  };
}

/** The stored messages of a session, read with the admin token. */
async function stored(target: ServerProcess, sessionId: string) {
  const answer = await target.gql(
    `query($id: ID!) { session(id: $id) { messages(last: 100) { edges { node { id content status } } } } }`,
    { id: sessionId },
    ADMIN,
  );
  expect(answer.errors).toBeUndefined();
  return (answer.data.session?.messages.edges ?? [])
    .map((edge: any) => edge.node)
    .filter((node: any) => node.status === 'PERSISTED')
    .map((node: any) => ({ id: node.id, content: node.content }));
}

const codesOf = (answer: { errors?: { extensions?: { code?: string } }[] }) =>
  (answer.errors ?? []).map((error) => error.extensions?.code);

describe('retryNow', () => {
  faultTest(
    'writes back at once what a database outage left pending, with no background retry',
    async () => {
      const dataDir = await dataDirectory();
      // No background retry: only retryNow (or a later append) tries the database again.
      const target = await server({ DATA_DIR: dataDir, DB_RETRY_INTERVAL_MS: '0' });
      const lock = await lockDatabase(dataDir);
      const appended = await target.gql(
        APPEND,
        { input: { sessionId: 'outage', role: 'USER', content: 'held' } },
        READER,
      );
      expect(appended.data.appendMessage.status).toBe('QUEUED');
      const id: string = appended.data.appendMessage.message.id;
      await lock.release();
      expect((await status(target)).pendingStatus.totalPending).toBe(1);

      expect(codesOf(await target.gql(RETRY, {}, READER))).toEqual(['FORBIDDEN']);
      expect(codesOf(await target.gql(RETRY))).toEqual(['UNAUTHENTICATED']);
      expect((await status(target)).pendingStatus.totalPending).toBe(1);

      const answer = await target.gql(RETRY, {}, ADMIN);

      expect(answer.errors).toBeUndefined();
      expect(answer.data.retryNow).toBe(true);
      await eventually(async () => {
        const now = await status(target);
        expect(now.pendingStatus.totalPending).toBe(0);
        expect(now.spoolStatus.messages).toBe(0);
      });
      expect(await stored(target, 'outage')).toEqual([{ id, content: 'held' }]);
    },
  );
});

describe('reDriveSetAside and dropSetAside', () => {
  faultTest(
    're-drive a refused record into the database, refuse a malformed line, drop one with its reason logged, and keep both decisions across a restart',
    async () => {
      const dataDir = await dataDirectory();
      const spoolDir = join(dataDir, 'pending_messages');
      await mkdir(spoolDir, { recursive: true, mode: 0o700 });
      const record = acceptedRecord('redriven', 'back again', {
        acceptedAt: Date.now() - 60_000,
      });
      const refused: SetAsideEntry = {
        at: Date.now() - 30_000,
        reason: 'refused by the database: a trigger said no',
        source: 'memory',
        sessionId: record.sessionId,
        messageId: record.id,
        record,
      };
      const torn: SetAsideEntry = {
        at: Date.now() - 20_000,
        reason: 'checksum mismatch (torn or corrupted line)',
        source: 'segment-of-a-dead-instance.jsonl',
        offset: 120,
        raw: '{"crc":"00000000","v":1,"mess',
      };
      const original = `${JSON.stringify(refused)}\n${JSON.stringify(torn)}\n`;
      await writeFile(join(spoolDir, SET_ASIDE_LOG), original, { mode: 0o600 });
      let target = await server({ DATA_DIR: dataDir });

      const listed = (await status(target)).spoolStatus;
      expect(listed.setAsideCount).toBe(2);
      const [refusedId, tornId] = listed.setAside.map((entry) => entry.id);
      expect(refusedId).toMatch(/^[0-9a-f]{16}$/);
      expect(tornId).toMatch(/^[0-9a-f]{16}$/);
      expect(tornId).not.toBe(refusedId);

      // Admin only.
      expect(codesOf(await target.gql(DROP, { input: { id: tornId } }, READER))).toEqual([
        'FORBIDDEN',
      ]);
      // A line that is still no record is refused, with why, and stays.
      const malformed = await target.gql(REDRIVE, { input: { id: tornId } }, ADMIN);
      expect(codesOf(malformed)).toEqual(['BAD_USER_INPUT']);
      expect(malformed.errors?.[0].message).toMatch(
        /cannot be re-driven, it holds no valid message: checksum mismatch/,
      );

      const redriven = await target.gql(REDRIVE, { input: { id: refusedId } }, ADMIN);

      expect(redriven.errors).toBeUndefined();
      expect(redriven.data.reDriveSetAside).toEqual({
        id: refusedId,
        reason: refused.reason,
        sessionId: 'redriven',
        messageId: record.id,
      });
      await eventually(async () =>
        expect(await stored(target, 'redriven')).toEqual([
          { id: record.id, content: 'back again' },
        ]),
      );

      const dropped = await target.gql(DROP, { input: { id: tornId } }, ADMIN);

      expect(dropped.errors).toBeUndefined();
      expect(dropped.data.dropSetAside).toEqual({
        id: tornId,
        reason: torn.reason,
        sessionId: null,
        messageId: null,
      });
      await target.waitForOutput(
        new RegExp(`Dropped set-aside entry ${tornId} .*set aside because: checksum mismatch`),
      );
      expect((await status(target)).spoolStatus).toEqual({
        messages: 0,
        setAsideCount: 0,
        setAside: [],
      });
      // Acting twice on one entry finds it closed.
      expect(codesOf(await target.gql(DROP, { input: { id: tornId } }, ADMIN))).toEqual([
        'NOT_FOUND',
      ]);
      expect(codesOf(await target.gql(DROP, { input: { id: 'not-an-id' } }, ADMIN))).toEqual([
        'BAD_USER_INPUT',
      ]);
      // The log keeps the entries' lines as they were, each closed by a line after it.
      const log = await readFile(join(spoolDir, SET_ASIDE_LOG), 'utf8');
      expect(log.startsWith(original)).toBe(true);
      expect(
        log
          .slice(original.length)
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line))
          .map(({ resolved, action }) => ({ resolved, action })),
      ).toEqual([
        { resolved: refusedId, action: 'redriven' },
        { resolved: tornId, action: 'dropped' },
      ]);

      await target.stop();
      target = await server({ DATA_DIR: dataDir });
      expect((await status(target)).spoolStatus.setAsideCount).toBe(0);
      expect(await stored(target, 'redriven')).toEqual([{ id: record.id, content: 'back again' }]);
    },
  );
});
