import request from 'supertest';
import { v4 as uuidV4, v5 as uuidV5 } from 'uuid';
import { databaseKinds } from './support/databases.js';
import { eventually, faultSuite, readJournal } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';
import { spoolUnderRegularFile } from './support/crash-run.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';

// An import during a database outage is journaled (QUEUED) as an append is; the process is
// then killed (SIGKILL, no shutdown hook), and a start with the database back stores exactly
// what the answer counted, with the ids, times and order of the file. A second import of the
// same file stores nothing and restores the session's own fields.
const { cleanups, dataDirectory, faultTest, lockDatabase, server } = faultSuite(60_000, {
  DB_RETRY_INTERVAL_MS: '200',
});
const SESSION = 'imported-during-outage';
const MESSAGES = 2500;
const NAMESPACE = '6f0f3c52-4a7d-4c38-9a8e-3c1d2b7e5a90';

/** An export's lines: the session, then MESSAGES messages, every 4th with a client id. */
function exportFile() {
  const messages = Array.from({ length: MESSAGES }, (_, index) => {
    const clientMessageId = index % 4 === 0 ? `c-${index}` : null;
    return {
      id: clientMessageId
        ? uuidV5(JSON.stringify([SESSION, clientMessageId]), NAMESPACE)
        : uuidV4(),
      sessionId: SESSION,
      status: 'PERSISTED',
      role: index % 2 === 0 ? 'USER' : 'ASSISTANT',
      content: `message ${index} 😀 e\u0301`,
      clientMessageId,
      toolName: null,
      toolCallId: null,
      toolCalls: null,
      metadata: index % 5 === 0 && index !== 10 ? { index } : null,
      createdAt: new Date(Date.UTC(2023, 0, 1) + index * 1000).toISOString(),
      ...changesOf(index),
    };
  });
  const session = {
    id: SESSION,
    title: 'Imported 🗂️',
    metadata: { from: 'elsewhere' },
    createdAt: messages[0].createdAt,
    updatedAt: messages[messages.length - 1].createdAt,
    messageCount: MESSAGES,
    revision: MESSAGES + 1,
  };
  const body = [{ session }, ...messages.map((message) => ({ message }))]
    .map((line) => JSON.stringify(line))
    .join('\n');
  return { body, messages, session };
}

/** Every 7th message was edited where it came from, the 10th redacted; the rest never changed. */
function changesOf(index: number) {
  const later = new Date(Date.UTC(2023, 0, 2) + index * 1000).toISOString();
  if (index === 10) {
    return {
      content: '',
      revision: 3,
      editedAt: later,
      redacted: true,
      redactedAt: later,
      redactionReason: 'removed where it came from',
    };
  }
  const edited = index % 7 === 0;
  return {
    revision: edited ? 2 : 1,
    editedAt: edited ? later : null,
    redacted: false,
    redactedAt: null,
    redactionReason: null,
  };
}

const importInto = (target: ServerProcess, body: string) =>
  request(target.url)
    .post(`/sessions/${SESSION}/import`)
    .set('content-type', 'application/x-ndjson')
    .send(body);

const exportOf = async (target: ServerProcess) => {
  const answer = await request(target.url).get(`/sessions/${SESSION}/export`);
  return answer.status === 200
    ? answer.text
        .split('\n')
        .slice(0, -1)
        .map((line) => JSON.parse(line) as Record<string, any>)
    : [];
};

/** Starts the database's outage for a server on `env` (started once first); the restore. */
async function outageOf(
  database: 'sqlite' | 'postgres',
  env: Record<string, string>,
): Promise<() => Promise<void>> {
  if (database === 'postgres') {
    const { proxy, url } = await proxiedPostgresSchema(cleanups);
    env.DATABASE_URL = url;
    const first = await server(env);
    await first.stop('SIGTERM');
    proxy.cut();
    return () => Promise.resolve(proxy.restore());
  }
  // The database file exists (a first start made it), and another process holds its lock.
  const first = await server(env);
  await first.stop('SIGTERM');
  const lock = await lockDatabase(env.DATA_DIR);
  return () => lock.kill();
}

type Counted = { statuses: Record<string, number>; sessionRestored: boolean };

describe.each(databaseKinds())('an import during an outage of %s, then kill -9', (database) => {
  faultTest(
    'stores after the restart exactly what the answer counted, as the file has it',
    async () => {
      const dataDir = await dataDirectory();
      const env: Record<string, string> = { DATA_DIR: dataDir };
      const restore = await outageOf(database, env);
      const target = await server(env);
      const { body, messages, session } = exportFile();

      const answer = await importInto(target, body);
      expect(answer.status).toBe(200);
      const counted = answer.body as Counted;
      // Nothing is stored during the outage; every message is journaled and synced, or held.
      expect(counted.statuses.PERSISTED).toBe(0);
      expect(counted.statuses.QUEUED + counted.statuses.BUFFERED).toBe(MESSAGES);
      expect(counted.statuses.QUEUED).toBeGreaterThan(0);
      expect(counted.sessionRestored).toBe(false);
      const journaled = (await readJournal(`${dataDir}/pending_messages`)).map((line) => line.id);
      expect(journaled).toHaveLength(counted.statuses.QUEUED);

      expect(await target.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      await restore();
      const restarted = await server(env);

      // What was QUEUED is stored, in the file's order, with its ids and times; the BUFFERED ones
      // (memory only) may be lost with the process, as their status said.
      const stored = await eventually(async () => {
        const lines = await exportOf(restarted);
        expect(lines.length - 1).toBe(counted.statuses.QUEUED);
        return lines;
      }, 20_000);
      const expected = messages.slice(0, counted.statuses.QUEUED);
      expect(stored.slice(1).map((line) => line.message)).toEqual(expected);

      // Importing the file again stores what was lost, nothing twice, and restores the session.
      const again = await importInto(restarted, body);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({
        messages: MESSAGES,
        existing: counted.statuses.QUEUED,
        accepted: MESSAGES - counted.statuses.QUEUED,
        statuses: { PERSISTED: MESSAGES, QUEUED: 0, BUFFERED: 0 },
        sessionRestored: true,
      });
      const restored = await exportOf(restarted);
      expect(restored[0]).toEqual({ session });
      expect(restored.slice(1).map((line) => line.message)).toEqual(messages);
    },
  );

  // The control: a journal that takes nothing leaves every message BUFFERED (memory only), and
  // a kill -9 loses them. This suite sees that loss; counted as the answer said, none is owed.
  faultTest(
    'control: with a spool that takes nothing, the kill loses what was BUFFERED',
    async () => {
      const dataDir = await dataDirectory();
      const env: Record<string, string> = {
        DATA_DIR: dataDir,
        SPOOL_DIR: await spoolUnderRegularFile(dataDir),
      };
      const restore = await outageOf(database, env);
      const target = await server(env);
      const answer = await importInto(target, exportFile().body);
      expect(answer.status).toBe(200);
      const counted = answer.body as Counted;
      expect(counted.statuses).toEqual({ PERSISTED: 0, QUEUED: 0, BUFFERED: MESSAGES });

      expect(await target.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      await restore();
      const restarted = await server(env);
      // Lost, as BUFFERED said they might be: counted as promises, all of them would be missing.
      expect((await exportOf(restarted)).length).toBe(0);
    },
  );
});
