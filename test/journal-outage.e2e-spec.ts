import { chmod, chown, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  appendMessage,
  eventually,
  faultSuite,
  holdSqliteLock,
  metricValue,
  occurrences,
  readJournal,
  readTranscript,
} from './support/fault-helpers.js';
import { startServer, temporaryDataDir, type ServerProcess } from './support/server-process.js';

// A segment whose mode is 000 for a while (a backup tool, an operator) under a server that is
// not root, as in production: the drain must see an outage of the file, not corruption. Every
// message answered QUEUED ends stored, none is set aside, nothing is deleted meanwhile.
const { cleanups, faultTest } = faultSuite(60_000);
const NOBODY = { uid: 65534, gid: 65534 };
const ADMIN = { authorization: 'Bearer t' };
const SESSION = 'outage';
const OTHER = 'bystander';
const CAP = 5;

const STATUS = `{ spoolStatus { messages setAsideCount setAside { source reason }
  blocked { source reason records since } } }`;

/** A data directory owned by the unprivileged user the server runs as. */
async function nobodysDataDir(): Promise<{ dataDir: string; spoolDir: string }> {
  const dataDir = await temporaryDataDir();
  cleanups.add(dataDir.remove);
  const spoolDir = join(dataDir.path, 'pending_messages');
  await mkdir(spoolDir, { mode: 0o700 });
  for (const path of [dataDir.path, spoolDir]) await chown(path, NOBODY.uid, NOBODY.gid);
  return { dataDir: dataDir.path, spoolDir };
}

async function startAsNobody(dataDir: string): Promise<ServerProcess> {
  const started = await startServer(
    {
      DATA_DIR: dataDir,
      ADMIN_TOKEN: 't',
      MAX_PENDING_PER_SESSION: String(CAP),
      DB_RETRY_INTERVAL_MS: '200',
    },
    { runAs: NOBODY },
  );
  cleanups.showOnFailure(`server pid ${started.child.pid}`, () => started.output());
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

describe('a segment that cannot be read for a while', () => {
  faultTest(
    'keeps its QUEUED messages owed, lists it as blocked, logs it once, and stores every one once it reads again',
    async () => {
      const { dataDir, spoolDir } = await nobodysDataDir();
      const target = await startAsNobody(dataDir);
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());

      const sent = Array.from({ length: 20 }, (_, index) => `queued-${index + 1}`);
      for (const content of sent) {
        expect((await appendMessage(target, SESSION, content)).status).toBe('QUEUED');
      }
      const { segments } = await readJournal(spoolDir);
      expect(segments).toHaveLength(1);
      const segment = join(spoolDir, segments[0]);

      // The mode changes under the running server, then the database comes back: the drain
      // of the 15 messages only the disk holds meets EACCES.
      await chmod(segment, 0o000);
      await holder.release();
      // Another session is not held back by it.
      await eventually(
        async () => expect((await appendMessage(target, OTHER, 'fine')).status).toBe('PERSISTED'),
        15_000,
      );

      // The drain met the segment: an outage is logged (or, before, the records were set aside).
      await target.waitForOutput(/cannot be used: segment unreadable|Set aside message/, 15_000);
      expect(target.output()).not.toContain('Set aside');
      const blocked = await eventually(async () => {
        const status = await target.gql(STATUS, {}, ADMIN);
        expect(status.data.spoolStatus.blocked).toEqual([
          {
            source: segments[0],
            reason: expect.stringContaining('EACCES'),
            records: 20,
            since: expect.any(Number),
          },
        ]);
        return status.data.spoolStatus;
      }, 15_000);
      expect(blocked.messages).toBe(20);
      expect(blocked.setAsideCount).toBe(0);
      expect((await target.get('/health')).body.details.spool).toMatchObject({ blocked: 1 });
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(1);
      // The session's order is kept: nothing of it is stored past the record it cannot read
      // (the session list is the database's alone). A read of its transcript would need the
      // records the segment holds: refused, not answered with a gap.
      const listed = await target.gql('{ sessions(first: 10) { edges { node { id } } } }');
      expect(listed.data.sessions.edges).toEqual([{ node: { id: OTHER } }]);
      const read = await target.gql(
        'query($id: ID!) { session(id: $id) { messages(first: 100) { totalCount } } }',
        { id: SESSION },
      );
      expect(read.errors?.map((error: any) => error.extensions?.code)).toEqual([
        'JOURNAL_UNAVAILABLE',
      ]);
      // A few more retries fail meanwhile, with one log line for them all.
      await eventually(async () => {
        const metrics = await target.get('/metrics');
        expect(metricValue(metrics.text, 'scribe_spool_blocked')).toBe(1);
        expect(await readdir(spoolDir)).toContain(segments[0]);
      });

      await chmod(segment, 0o600);

      await eventually(async () => {
        expect((await readTranscript(target, SESSION)).contents).toEqual(sent);
      }, 40_000);
      const after = await target.gql(STATUS, {}, ADMIN);
      expect(after.data.spoolStatus).toMatchObject({
        messages: 0,
        setAsideCount: 0,
        setAside: [],
        blocked: [],
      });
      expect(await readdir(spoolDir)).not.toContain('set-aside.jsonl');
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(0);
      expect(metricValue((await target.get('/metrics')).text, 'scribe_set_aside_total')).toBe(
        undefined,
      );
      expect(
        occurrences(target.output(), /ERROR.*cannot be used: segment unreadable: EACCES/),
      ).toBe(1);
      expect(occurrences(target.output(), /usable again after \d+ ms/)).toBe(1);
      expect(target.output()).not.toContain('Set aside');
    },
  );

  faultTest('shows the blocked gauge at 0 from the start', async () => {
    const { dataDir } = await nobodysDataDir();
    const target = await startAsNobody(dataDir);

    expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(0);
    expect((await target.get('/health')).body.details.spool).toEqual({ status: 'up', blocked: 0 });
  });
});
