import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { databaseKinds } from './support/databases.js';
import { processEnd } from './support/crash-process.js';
import { appendMessage, eventually, faultSuite } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';
import { execPostgres, execSqlite, refusingTrigger } from './support/direct-sql.js';
import request from 'supertest';

// redactMessage removes a message's content for good: the journal and the set-aside log keep
// no copy, and a kill -9 at any point of it never brings the content back. The message is first
// QUEUED through an outage and refused by the database (a trigger stands in for a constraint),
// so set aside whole, then re-driven by an operator once the trigger is gone: it is stored, and
// the set-aside log still holds it, as it does for every entry it ever kept. The control is a
// kill before the redaction scrubbed it, where the same search of the disk finds that copy.
const { cleanups, dataDirectory, faultTest, lockDatabase, server } = faultSuite(60_000, {
  DB_RETRY_INTERVAL_MS: '200',
  ADMIN_TOKEN: 't',
});
const ADMIN = { authorization: 'Bearer t' };
const SESSION = 'to-forget';
const SECRET = 'card-4111-1111-1111-1111-xylophone';
const REDACT = `mutation($input: RedactMessageInput!) {
  redactMessage(input: $input) { id content metadata redacted redactionReason revision }
}`;
const SET_ASIDE = `{ spoolStatus { setAside { id messageId } } }`;
const REDRIVE = `mutation($input: SetAsideActionInput!) { reDriveSetAside(input: $input) { id } }`;
const READ = `query($id: ID!) {
  session(id: $id) { messages(first: 100) { edges { node { id status content metadata redacted } } } }
}`;
const SEARCH = `query($q: String!) { searchMessages(query: $q) { edges { node { message { id } } } } }`;

/** The files under `dir` (recursively) whose bytes hold `text`, by path. */
async function filesHolding(dir: string, text: string): Promise<string[]> {
  const found: string[] = [];
  const needle = Buffer.from(text);
  for (const entry of await readdir(dir, { recursive: true })) {
    const path = join(dir, entry);
    if (!(await stat(path)).isFile()) continue;
    if ((await readFile(path)).includes(needle)) found.push(entry);
  }
  return found.sort();
}

/** A database of the kind, down, and the ways to refuse SECRET, let it be, and end the outage. */
async function database(kind: 'sqlite' | 'postgres', env: Record<string, string>) {
  if (kind === 'postgres') {
    const { proxy, url, directUrl } = await proxiedPostgresSchema(cleanups);
    env.DATABASE_URL = url;
    const first = await server(env);
    await first.stop('SIGTERM');
    await execPostgres(directUrl, REFUSAL.postgres);
    proxy.cut();
    return {
      restore: () => Promise.resolve(proxy.restore()),
      allow: () => execPostgres(directUrl, REFUSAL.dropPostgres),
    };
  }
  const first = await server(env);
  await first.stop('SIGTERM');
  const file = join(env.DATA_DIR, 'scribe.sqlite');
  await execSqlite(file, REFUSAL.sqlite);
  const lock = await lockDatabase(env.DATA_DIR);
  return {
    restore: () => lock.kill(),
    allow: () => execSqlite(file, REFUSAL.dropSqlite),
  };
}

// The test's SQL names a part of SECRET only: SQLite's schema page would keep all of it.
const REFUSAL = refusingTrigger(
  'refuse_secret',
  "instr(NEW.content, 'xylo') > 0",
  "strpos(NEW.content, 'xylo') > 0",
);

describe.each(databaseKinds())('redactMessage and kill -9 on %s', (database_) => {
  /**
   * A server holding SECRET stored, with a copy of it left in its journal; what it needs to
   * start again. (On SQLite the database file is under the data directory too.)
   */
  /**
   * A server holding SECRET stored, with a copy of it left in its set-aside log; what it needs
   * to start again. (On SQLite the database file is under the data directory too.)
   */
  async function storedWithCopy(failpoint?: string) {
    const dataDir = await dataDirectory();
    const env: Record<string, string> = { DATA_DIR: dataDir };
    const { restore, allow } = await database(database_, env);
    const target = await server({ ...env, ...(failpoint ? { SCRIBE_FAILPOINT: failpoint } : {}) });
    await appendMessage(target, SESSION, 'before');
    const secret = await appendMessage(target, SESSION, SECRET);
    await appendMessage(target, SESSION, 'after');
    expect(secret.status).toBe('QUEUED');
    await restore();
    const entry = await eventually(async () => {
      const answer = await target.gql(SET_ASIDE, {}, ADMIN);
      const [found] = answer.data.spoolStatus.setAside;
      expect(found).toMatchObject({ messageId: secret.id });
      return found as { id: string };
    }, 20_000);
    await allow();
    const redriven = await target.gql(REDRIVE, { input: { id: entry.id } }, ADMIN);
    expect(redriven.errors).toBeUndefined();
    await eventually(async () => {
      const answer = await target.gql(READ, { id: SESSION }, ADMIN);
      const nodes = answer.data.session.messages.edges.map((edge: any) => edge.node);
      expect(nodes.map((node: any) => [node.status, node.content])).toEqual([
        ['PERSISTED', 'before'],
        ['PERSISTED', SECRET],
        ['PERSISTED', 'after'],
      ]);
    }, 20_000);
    // The copy the redaction must remove: without it this suite could not see a loss.
    expect(await filesHolding(join(dataDir, 'pending_messages'), SECRET)).not.toEqual([]);
    return { dataDir, env, restarted: target, id: secret.id };
  }

  const redact = (target: ServerProcess, id: string) =>
    target.gql(REDACT, { input: { sessionId: SESSION, id, reason: 'asked to forget' } }, ADMIN);

  async function expectForgotten(target: ServerProcess, dataDir: string, id: string) {
    const read = await target.gql(READ, { id: SESSION }, ADMIN);
    const nodes = read.data.session.messages.edges.map((edge: any) => edge.node);
    expect(nodes.map((node: any) => node.content)).toEqual(['before', '', 'after']);
    expect(nodes[1]).toMatchObject({ id, redacted: true, metadata: null });
    const found = await target.gql(SEARCH, { q: 'xylophone' }, ADMIN);
    expect(found.data.searchMessages.edges).toEqual([]);
    const exported = await request(target.url).get(`/sessions/${SESSION}/export`).set(ADMIN);
    expect(exported.status).toBe(200);
    expect(exported.text).not.toContain(SECRET);
    expect(await filesHolding(join(dataDir, 'pending_messages'), SECRET)).toEqual([]);
    // SQLite: nor does the database's own file, nor its write-ahead log (secure_delete zeroes
    // what the row held, and the log is checkpointed). The search index keeps the words as
    // index terms until FTS5 merges its segments (see docs/chat-front-ends.md), never the text.
    if (database_ === 'sqlite') expect(await filesHolding(dataDir, SECRET)).toEqual([]);
  }

  faultTest('a redaction answered, then kill -9: the content never comes back', async () => {
    const { dataDir, env, restarted, id } = await storedWithCopy();

    const answer = await redact(restarted, id);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.redactMessage).toMatchObject({ content: '', redacted: true, revision: 2 });
    expect(await filesHolding(join(dataDir, 'pending_messages'), SECRET)).toEqual([]);
    expect(await restarted.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

    const again = await server(env);
    await expectForgotten(again, dataDir, id);
  });

  faultTest(
    'killed between the journal scrub and the commit: no copy on disk, and redacting again finishes it',
    async () => {
      const { dataDir, env, restarted, id } = await storedWithCopy('redact.after-scrub');

      await redact(restarted, id).catch(() => undefined);
      expect(await processEnd(restarted.child)).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await filesHolding(join(dataDir, 'pending_messages'), SECRET)).toEqual([]);

      const again = await server(env);
      // Not redacted yet: the client was never answered, and redacts again.
      const read = await again.gql(READ, { id: SESSION }, ADMIN);
      expect(read.data.session.messages.edges[1].node.content).toBe(SECRET);
      expect((await redact(again, id)).data.redactMessage.redacted).toBe(true);
      await expectForgotten(again, dataDir, id);
    },
  );

  faultTest(
    'killed after the commit, before the answer: the content is gone all the same',
    async () => {
      const { dataDir, env, restarted, id } = await storedWithCopy('redact.after-commit');

      await redact(restarted, id).catch(() => undefined);
      expect(await processEnd(restarted.child)).toEqual({ code: null, signal: 'SIGKILL' });

      await expectForgotten(await server(env), dataDir, id);
    },
  );

  faultTest(
    'control: killed before the journal was scrubbed, the same search of the disk finds the copy',
    async () => {
      const { dataDir, env, restarted, id } = await storedWithCopy('redact.before-scrub');

      await redact(restarted, id).catch(() => undefined);
      expect(await processEnd(restarted.child)).toEqual({ code: null, signal: 'SIGKILL' });

      // What expectForgotten would refuse: the copy is still on disk, and reads give it.
      expect(await filesHolding(join(dataDir, 'pending_messages'), SECRET)).not.toEqual([]);
      const again = await server(env);
      await expect(expectForgotten(again, dataDir, id)).rejects.toThrow();
    },
  );
});
