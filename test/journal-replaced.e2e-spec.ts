import {
  chmod,
  chown,
  lstat,
  mkdir,
  readdir,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import {
  READ,
  appendMessage,
  eventually,
  faultSuite,
  holdSqliteLock,
  occurrences,
  readJournal,
  readTranscript,
  type AppendStatus,
} from './support/fault-helpers.js';
import {
  literally,
  startServer,
  temporaryDataDir,
  type ServerProcess,
} from './support/server-process.js';

// A stranger's attack on issue 19: SPOOL_DIR itself replaced under a server that is not root,
// during a database outage, by a symlink to another directory or by a directory owned by root
// (mode 0755). The spool must neither follow the symlink nor claim a re-journal it could not
// make: what memory held of the vanished segment, and every later message, is BUFFERED (and
// counted so) until the operator puts the directory right, and then journaled; every QUEUED
// answer survives kill -9.
const { cleanups, faultTest } = faultSuite(60_000);
const NOBODY = { uid: 65534, gid: 65534 };
const ADMIN = { authorization: 'Bearer t' };
const SESSION = 'replaced';
const STATUS = '{ spoolStatus { writable error messages buffered lostRecords } }';

interface Answer {
  content: string;
  status: AppendStatus;
  id: string;
}

async function nobodysDataDir(): Promise<{ dataDir: string; spoolDir: string }> {
  const dataDir = await temporaryDataDir();
  cleanups.add(dataDir.remove);
  const spoolDir = join(dataDir.path, 'pending_messages');
  await mkdir(spoolDir, { mode: 0o700 });
  for (const path of [dataDir.path, spoolDir]) await chown(path, NOBODY.uid, NOBODY.gid);
  return { dataDir: dataDir.path, spoolDir };
}

async function startAsNobody(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const started = await startServer(
    { DATA_DIR: dataDir, ADMIN_TOKEN: 't', DB_RETRY_INTERVAL_MS: '200', ...env },
    { runAs: NOBODY },
  );
  cleanups.showOnFailure(`server pid ${started.child.pid}`, () => started.output());
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

async function appendAll(target: ServerProcess, label: string, answers: Answer[]) {
  const round: Answer[] = [];
  for (let number = 1; number <= 3; number++) {
    const content = `${label}-${number}`;
    // The content is the client id too: a retry is answered as its message stands now.
    round.push({ content, ...(await appendMessage(target, SESSION, content, content)) });
  }
  answers.push(...round);
  return round.map((answer) => answer.status);
}

async function spoolStatus(target: ServerProcess): Promise<any> {
  const response = await target.gql(STATUS, {}, ADMIN);
  if (response.errors) throw new Error(JSON.stringify(response.errors));
  return response.data.spoolStatus;
}

/** A restart (the lock holder gone) stores `contents` once each, after the first, stored one. */
async function restartAndExpect(dataDir: string, contents: string[]): Promise<void> {
  const restarted = await startAsNobody(dataDir);
  await eventually(async () =>
    expect((await readTranscript(restarted, SESSION)).contents).toEqual(['stored', ...contents]),
  );
}

/** The operator's repair: whatever stands at SPOOL_DIR goes, a new directory of the server's user. */
async function putFreshDirectory(spoolDir: string): Promise<void> {
  await rm(spoolDir);
  // The server makes a missing SPOOL_DIR itself, as its own user, when it next tries the
  // disk: between the two steps it may have made it first.
  await mkdir(spoolDir, { mode: 0o700 }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST' || !(await lstat(spoolDir)).isDirectory()) throw error;
  });
  await chown(spoolDir, NOBODY.uid, NOBODY.gid);
}

/**
 * Journals 3 messages during an outage, has `replace` put something else where SPOOL_DIR was,
 * appends 3 more, checks every answer and view is true, has `repair` put it right, and counts
 * what a kill -9 and a restart left.
 */
async function replaceUnderLoad(
  replace: (spoolDir: string, dataDir: string) => Promise<string>,
  repair: (spoolDir: string) => Promise<void>,
) {
  const { dataDir, spoolDir } = await nobodysDataDir();
  const target = await startAsNobody(dataDir);
  const answers: Answer[] = [];
  expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
  const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
  cleanups.add(() => holder.kill());
  expect(await appendAll(target, 'before', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
  expect((await readJournal(spoolDir)).segments).toHaveLength(1);

  // The original goes aside (an operator's mv); something else takes its name.
  await rename(spoolDir, `${spoolDir}.moved`);
  const found = await replace(spoolDir, dataDir);
  expect(await appendAll(target, 'after', answers)).toEqual(['BUFFERED', 'BUFFERED', 'BUFFERED']);
  // A message answered QUEUED before is memory only now: its retry is answered so.
  const retried = await appendMessage(target, SESSION, 'before-1', 'before-1');
  expect(retried).toEqual({ status: 'BUFFERED', id: answers[0].id });
  // And a read lists it so: no message is shown QUEUED that no disk holds.
  const read = await target.gql(READ, { id: SESSION });
  const listed = read.data.session.messages.edges.map(({ node }: any) => node.status);
  expect(listed).toEqual(['PERSISTED', ...answers.map(() => 'BUFFERED')]);

  // Nothing is on disk in the live spool; the 3 records memory held of the vanished segment
  // and the 3 new ones are memory only, and none was lost (memory held them all).
  const broken = await spoolStatus(target);
  expect(broken).toMatchObject({ writable: false, messages: 0, buffered: 3, lostRecords: 0 });
  expect(broken.error).toContain(spoolDir);
  expect(broken.error).toContain(found);
  const health = await target.get('/health');
  // Both down (the database is locked): 503. Paths stay out of /health; its code says why.
  expect(health.status).toBe(503);
  expect(health.body.details.spool).toMatchObject({ status: 'down', code: 'SPOOL_DIR_UNUSABLE' });
  // Both ERROR lines go out with the answers above, on a pipe of their own (stderr) that the
  // answers can overtake: waited for. Its lines come in order, so the absence of a lock line
  // below is checked against all that stderr carried up to the later of the two.
  await target.waitForOutput('3 record(s) still in memory are BUFFERED');
  await target.waitForOutput(new RegExp(`ERROR.*${literally(spoolDir)} is ${found}`));
  // No re-journal is claimed that did not happen (it happens only once the directory is
  // repaired, below), and the refusal is logged once.
  expect(target.output()).not.toMatch(/journaled again into (a new )?segment/);
  expect(target.output()).toContain('3 record(s) still in memory are BUFFERED');
  expect(
    occurrences(target.output(), new RegExp(`ERROR.*${literally(spoolDir)} is ${found}`)),
  ).toBe(1);
  // The directory's line says it all: no lock line sends the operator after the lock file.
  expect(target.output()).not.toContain('vanished or was replaced');

  await repair(spoolDir);
  // Recovery: a new segment holds the 3 orphans and the 3 BUFFERED messages, logged once.
  await eventually(
    async () =>
      expect(await spoolStatus(target)).toMatchObject({
        writable: true,
        messages: 6,
        buffered: 0,
        lostRecords: 0,
      }),
    15_000,
  );
  expect(await appendMessage(target, SESSION, 'before-1', 'before-1')).toEqual({
    status: 'QUEUED',
    id: answers[0].id,
  });
  const onDisk = new Set((await readJournal(spoolDir)).map((line) => line.id));
  expect(answers.filter((answer) => !onDisk.has(answer.id)).map((a) => a.content)).toEqual([]);
  // Logged as the recovery goes, on pipes the answers above can overtake: waited for.
  await target.waitForOutput(/3 record\(s\) journaled again into segment/);
  await target.waitForOutput(`on-disk spool at ${spoolDir} writable again`);
  await target.waitForOutput(/ERROR.*owner-.*\.lock vanished or was replaced/);
  expect(occurrences(target.output(), /3 record\(s\) journaled again into segment/)).toBe(1);
  expect(occurrences(target.output(), `on-disk spool at ${spoolDir} writable again`)).toBe(1);
  // Only now, in the repaired directory, is the lock found missing and taken again.
  expect(
    occurrences(target.output(), new RegExp(`ERROR.*owner-.*\\.lock vanished or was replaced`)),
  ).toBe(1);

  expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
  await holder.release();
  await rm(`${spoolDir}.moved`, { recursive: true, force: true });
  await restartAndExpect(
    dataDir,
    answers.map((answer) => answer.content),
  );
}

describe('SPOOL_DIR replaced under a running instance that is not root', () => {
  faultTest(
    'by a symlink to a writable directory: refused, not followed; answers BUFFERED until a real directory is back, then all journaled and kept through kill -9',
    async () => {
      await replaceUnderLoad(async (spoolDir, dataDir) => {
        const elsewhere = join(dataDir, 'elsewhere');
        await mkdir(elsewhere, { mode: 0o700 });
        await chown(elsewhere, NOBODY.uid, NOBODY.gid);
        await symlink(elsewhere, spoolDir);
        return 'a symlink';
      }, putFreshDirectory);
    },
  );

  faultTest(
    'by a directory of root the server cannot write: answers BUFFERED until its owner is fixed, then all journaled and kept through kill -9',
    async () => {
      await replaceUnderLoad(
        async (spoolDir) => {
          await mkdir(spoolDir, { mode: 0o755 });
          return 'not writable';
        },
        (spoolDir) => chown(spoolDir, NOBODY.uid, NOBODY.gid),
      );
    },
  );

  faultTest(
    'by a file: refused as a symlink is (SPOOL_DIR_UNUSABLE, not a raw ENOTDIR); answers BUFFERED until a directory is back, then all journaled and kept through kill -9',
    async () => {
      await replaceUnderLoad(async (spoolDir) => {
        await writeFile(spoolDir, 'x');
        return 'not a directory';
      }, putFreshDirectory);
    },
  );

  faultTest(
    'moved aside and back while records only the disk held were in it: counted lost while gone, not once the same file is back, and all stored after kill -9',
    async () => {
      const { dataDir, spoolDir } = await nobodysDataDir();
      const moved = `${spoolDir}.moved`;
      // Memory holds one message a session: the older ones are on disk only.
      const target = await startAsNobody(dataDir, { MAX_PENDING_PER_SESSION: '1' });
      const answers: Answer[] = [];
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      expect(await appendAll(target, 'before', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);

      await rename(spoolDir, moved);
      expect((await appendMessage(target, SESSION, 'gone', 'gone')).status).toBe('BUFFERED');
      await eventually(async () =>
        expect(await spoolStatus(target)).toMatchObject({ lostRecords: 2 }),
      );
      // Its ERROR line goes out as the loss is counted, on a pipe an answer can overtake.
      await target.waitForOutput('2 record(s) only it held are LOST');

      // The instance has begun a new SPOOL_DIR meanwhile: the operator moves the files back.
      for (const name of await readdir(moved)) {
        await rename(join(moved, name), join(spoolDir, name));
      }
      await eventually(
        async () =>
          expect(await spoolStatus(target)).toMatchObject({
            writable: true,
            buffered: 0,
            lostRecords: 0,
          }),
        15_000,
      );
      await target.waitForOutput(/is back; its 2 record\(s\) counted LOST are on disk/);
      expect(
        occurrences(target.output(), /is back; its 2 record\(s\) counted LOST are on disk/),
      ).toBe(1);

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await holder.release();
      const restarted = await startAsNobody(dataDir);
      // Every QUEUED answer is stored once; the BUFFERED one was promised nothing.
      await eventually(async () => {
        const { contents } = await readTranscript(restarted, SESSION);
        expect(contents.filter((content) => content !== 'gone')).toEqual([
          'stored',
          ...answers.map((answer) => answer.content),
        ]);
      });
    },
  );

  faultTest(
    'made read-only in place (chmod 0500): the open segment takes appends (QUEUED, writable), the refused directory is the error, and every QUEUED answer survives kill -9',
    async () => {
      const { dataDir, spoolDir } = await nobodysDataDir();
      const target = await startAsNobody(dataDir);
      const answers: Answer[] = [];
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      expect(await appendAll(target, 'before', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);

      await chmod(spoolDir, 0o500);
      cleanups.add(() => chmod(spoolDir, 0o700));
      expect(await appendAll(target, 'after', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
      const status = await spoolStatus(target);
      // writable is whether an append is journaled now: it is, in the open segment.
      expect(status).toMatchObject({ writable: true, messages: 6, buffered: 0, lostRecords: 0 });
      expect(status.error).toContain(`${spoolDir} is not writable by uid 65534`);
      // No new segment could be begun there (a restart, a full segment): an early warning.
      const health = await target.get('/health');
      expect(health.status).toBe(503);
      expect(health.body.details.spool).toMatchObject({
        status: 'down',
        code: 'SPOOL_DIR_UNUSABLE',
      });
      expect((await readJournal(spoolDir)).map((line) => line.id).sort()).toEqual(
        answers.map((answer) => answer.id).sort(),
      );

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await holder.release();
      await chmod(spoolDir, 0o700);
      await restartAndExpect(
        dataDir,
        answers.map((answer) => answer.content),
      );
    },
  );

  faultTest(
    'by a symlink to the original directory, moved aside: refused at the next batch, not written through; the original put back takes them all, kept through kill -9',
    async () => {
      const { dataDir, spoolDir } = await nobodysDataDir();
      const moved = `${spoolDir}.moved`;
      const target = await startAsNobody(dataDir);
      const answers: Answer[] = [];
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      expect(await appendAll(target, 'before', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);

      // The segment's path still finds its file through the symlink: only SPOOL_DIR's own
      // inode tells that the journal would now be written through a symlink.
      await rename(spoolDir, moved);
      await symlink(moved, spoolDir);
      expect(await appendAll(target, 'after', answers)).toEqual([
        'BUFFERED',
        'BUFFERED',
        'BUFFERED',
      ]);
      // What was answered QUEUED is still synced in its segment, and is answered so.
      expect(await appendMessage(target, SESSION, 'before-1', 'before-1')).toEqual({
        status: 'QUEUED',
        id: answers[0].id,
      });
      expect(await readJournal(moved)).toHaveLength(3);
      const broken = await spoolStatus(target);
      // buffered counts orphans of a lost segment: there are none, the segment is intact.
      expect(broken).toMatchObject({ writable: false, messages: 3, buffered: 0, lostRecords: 0 });
      expect(broken.error).toContain(`${spoolDir} is a symlink`);
      const health = await target.get('/health');
      expect(health.status).toBe(503);
      expect(health.body.details.spool).toMatchObject({
        status: 'down',
        code: 'SPOOL_DIR_UNUSABLE',
      });
      // Logged with the first answer BUFFERED, on a pipe of its own (stderr) that the answers
      // can overtake: waited for. Its lines come in order, so a lock or segment line printed
      // before it would be in the output the two checks below read.
      await target.waitForOutput(new RegExp(`ERROR.*${literally(spoolDir)} is a symlink`));
      expect(
        occurrences(target.output(), new RegExp(`ERROR.*${literally(spoolDir)} is a symlink`)),
      ).toBe(1);
      expect(target.output()).not.toContain('vanished or was replaced');
      expect(target.output()).not.toContain('under the running instance');

      // The operator puts the original back: the same segment takes the BUFFERED messages.
      // rename(2) cannot put a directory over a symlink, so the swap takes two steps. The
      // server is stopped across them, or a retry in between finds no SPOOL_DIR at all and
      // (rightly) opens a new segment: this case is about the symlink, not that gap.
      process.kill(target.child.pid!, 'SIGSTOP');
      try {
        await rm(spoolDir);
        await rename(moved, spoolDir);
      } finally {
        process.kill(target.child.pid!, 'SIGCONT');
      }
      await eventually(
        async () =>
          expect(await spoolStatus(target)).toMatchObject({
            writable: true,
            messages: 6,
            buffered: 0,
            lostRecords: 0,
          }),
        15_000,
      );
      const journal = await readJournal(spoolDir);
      expect(journal.segments).toHaveLength(1);
      expect(journal.map((line) => line.id).sort()).toEqual(answers.map((a) => a.id).sort());
      await target.waitForOutput(`on-disk spool at ${spoolDir} writable again`);
      expect(occurrences(target.output(), `on-disk spool at ${spoolDir} writable again`)).toBe(1);

      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');
      await holder.release();
      await restartAndExpect(
        dataDir,
        answers.map((answer) => answer.content),
      );
    },
  );

  faultTest(
    'killed while a symlink stands in its place: a restart refuses it too, and once the original is put back every QUEUED answer is stored',
    async () => {
      const { dataDir, spoolDir } = await nobodysDataDir();
      const elsewhere = join(dataDir, 'elsewhere');
      const target = await startAsNobody(dataDir);
      const answers: Answer[] = [];
      expect((await appendMessage(target, SESSION, 'stored')).status).toBe('PERSISTED');
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      expect(await appendAll(target, 'before', answers)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
      await rename(spoolDir, `${spoolDir}.moved`);
      await mkdir(elsewhere, { mode: 0o700 });
      await chown(elsewhere, NOBODY.uid, NOBODY.gid);
      await symlink(elsewhere, spoolDir);
      expect(await appendAll(target, 'after', answers)).toEqual([
        'BUFFERED',
        'BUFFERED',
        'BUFFERED',
      ]);
      expect((await target.stop('SIGKILL')).signal).toBe('SIGKILL');

      // A restart meets the symlink at start: refused there too, nothing written behind it.
      const refusing = await startAsNobody(dataDir);
      expect((await appendMessage(refusing, SESSION, 'while-refused')).status).toBe('BUFFERED');
      expect(await spoolStatus(refusing)).toMatchObject({
        writable: false,
        error: expect.stringContaining(`${spoolDir} is a symlink`),
      });
      expect(await readdir(elsewhere)).toEqual([]);
      expect((await refusing.stop('SIGKILL')).signal).toBe('SIGKILL');

      // The operator puts the original back: what was answered QUEUED is in it; what was
      // answered BUFFERED was memory only, and died with the process, as answered.
      await holder.release();
      await rm(spoolDir);
      await rename(`${spoolDir}.moved`, spoolDir);
      await restartAndExpect(
        dataDir,
        answers.filter((a) => a.status === 'QUEUED').map((answer) => answer.content),
      );
    },
  );
});
