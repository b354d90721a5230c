import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { databaseKinds } from './support/databases.js';
import {
  faultSuite,
  appendMessage,
  eventually,
  holdSqliteLock,
  metricValue,
  readJournal,
  readTranscript,
} from './support/fault-helpers.js';
import { temporaryDataDir, type ServerProcess } from './support/server-process.js';
import { proxiedPostgresSchema } from './support/tcp-proxy.js';
import { execPostgres, execSqlite, refusingTrigger } from './support/direct-sql.js';

// Poison: input Scribe must refuse before accepting it (text it could not store faithfully),
// and records the database itself refuses (a trigger stands in for a constraint added by a
// migration or a DBA). A refusal is told apart from an outage: a fresh append is refused to
// its client; a record accepted during an outage (its client already holds QUEUED) is set
// aside, whole, with the reason, while everything around it is stored in order.
const TEST_TIMEOUT_MS = 45_000;
const ADMIN = { authorization: 'Bearer t' };

const APPEND_FULL = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id content } }
}`;
const APPEND_MANY = `mutation($input: AppendMessagesInput!) {
  appendMessages(input: $input) { status messages { id } }
}`;
const READ_FULL = `query($id: ID!) {
  session(id: $id) {
    messageCount
    messages(first: 1000) {
      edges { node { id content clientMessageId toolName toolCallId toolCalls metadata } }
    }
  }
}`;

const TEXT_FIELDS = ['content', 'clientMessageId', 'toolName', 'toolCallId'] as const;
const UNSTORABLE = [
  ['a lone high surrogate', 'y\ud800'],
  ['a lone low surrogate', 'y\udc00'],
  ['a NUL character', 'y\u0000'],
] as const;

// Stands in for a constraint: the database refuses a message whose content is `poison`.
const POISON = refusingTrigger('refuse_poison', "NEW.content = 'poison'", "NEW.content = 'poison'");

interface StoredMessage {
  id: string;
  content: string;
  clientMessageId: string | null;
  toolName: string | null;
  toolCallId: string | null;
  toolCalls: unknown;
  metadata: unknown;
}

async function readMessages(
  target: ServerProcess,
  sessionId: string,
): Promise<{ messageCount: number; messages: StoredMessage[] } | null> {
  const response = await target.gql(READ_FULL, { id: sessionId });
  if (response.errors) throw new Error(`read failed: ${JSON.stringify(response.errors)}`);
  const session = response.data?.session;
  if (!session) return null;
  return {
    messageCount: session.messageCount,
    messages: session.messages.edges.map((edge: any) => edge.node),
  };
}

async function admin(target: ServerProcess, query: string): Promise<any> {
  const response = await target.gql(query, {}, ADMIN);
  if (response.errors) throw new Error(`admin query failed: ${JSON.stringify(response.errors)}`);
  return response.data;
}

/** A database of one kind for one test: see database() below. */
interface TestDatabase {
  spoolDir: string;
  env: Record<string, string>;
  /** Makes the database refuse, for a reason of its own, every message whose content is `poison`. */
  refusePoison(): Promise<void>;
  beginOutage(): Promise<void>;
  endOutage(): Promise<void>;
}

describe.each(databaseKinds())('poison on %s', (kind) => {
  // No session cache: every read below is the database's own word.
  const { cleanups, faultTest, server } = faultSuite(TEST_TIMEOUT_MS, {
    ADMIN_TOKEN: 't',
    SESSION_CACHE_SIZE: '0',
  });

  /**
   * A database of the kind, with a way to make it refuse messages whose content is `poison`
   * and an outage that can begin and end: another process holding the SQLite write lock, or a
   * cut TCP proxy in front of PostgreSQL.
   */
  async function database(): Promise<TestDatabase> {
    const dataDir = await temporaryDataDir();
    cleanups.add(dataDir.remove);
    const spoolDir = join(dataDir.path, 'pending_messages');
    if (kind === 'sqlite') {
      const file = join(dataDir.path, 'scribe.sqlite');
      let release = async (): Promise<void> => undefined;
      return {
        spoolDir,
        env: { DATA_DIR: dataDir.path },
        refusePoison: () => execSqlite(file, POISON.sqlite),
        beginOutage: async () => {
          const holder = await holdSqliteLock(file);
          cleanups.add(() => holder.kill());
          release = () => holder.release();
        },
        endOutage: () => release(),
      };
    }
    const { proxy, url, directUrl } = await proxiedPostgresSchema(cleanups);
    return {
      spoolDir,
      env: { DATA_DIR: dataDir.path, DATABASE_URL: url },
      refusePoison: () => execPostgres(directUrl, POISON.postgres),
      beginOutage: async () => proxy.cut(),
      endOutage: async () => proxy.restore(),
    };
  }

  faultTest(
    'lone surrogates and NUL in each text field are refused with BAD_USER_INPUT naming the field, and change nothing',
    async () => {
      const db = await database();
      const target = await server({ ...db.env, DB_RETRY_INTERVAL_MS: '200' });
      let persisted = 0;
      for (const field of TEXT_FIELDS) {
        for (const [what, value] of UNSTORABLE) {
          const sessionId = `refused-${field}-${persisted}`;
          const clientMessageId = `client-${persisted}`;
          const input = {
            sessionId,
            role: 'TOOL',
            content: 'sent',
            clientMessageId,
            toolName: 'search',
            toolCallId: 'call-1',
            [field]: value,
          };
          const refused = await target.gql(APPEND_FULL, { input });
          // Pins: checkNewMessages refuses the text fields before anything is accepted.
          expect({
            field,
            what,
            data: refused.data,
            error: refused.errors?.[0]?.extensions,
          }).toEqual({
            field,
            what,
            data: null,
            error: { code: 'BAD_USER_INPUT', field: `input.${field}` },
          });
          expect(refused.errors?.[0]?.message).toMatch(
            value.includes('\u0000') ? /NUL character/ : /lone UTF-16 surrogate/,
          );
          // Nothing was created, not even the session.
          expect(await readMessages(target, sessionId)).toBeNull();

          // The same client id is free: the refused message was never accepted under it.
          const later = await target.gql(APPEND_FULL, {
            input: { sessionId, role: 'USER', content: `later-${field}`, clientMessageId },
          });
          expect(later.errors).toBeUndefined();
          expect(later.data.appendMessage.status).toBe('PERSISTED');
          expect(later.data.appendMessage.message.content).toBe(`later-${field}`);
          persisted += 1;
          const stored = await readMessages(target, sessionId);
          expect(stored?.messageCount).toBe(1);
          expect(stored?.messages.map((message) => message.content)).toEqual([`later-${field}`]);
        }
      }

      // In a batch, one bad field refuses the whole batch, and names the message.
      const batch = await target.gql(APPEND_MANY, {
        input: {
          sessionId: 'refused-batch',
          messages: [
            { role: 'USER', content: 'fine' },
            { role: 'TOOL', content: 'fine too', toolName: 'x\udfff' },
          ],
        },
      });
      expect(batch.errors?.[0]?.extensions).toEqual({
        code: 'BAD_USER_INPUT',
        field: 'input.messages.1.toolName',
      });
      expect(await readMessages(target, 'refused-batch')).toBeNull();

      // Nothing refused was counted, journaled or set aside.
      const metrics = (await target.get('/metrics')).text;
      expect(metricValue(metrics, 'scribe_appends_total{status="persisted"}')).toBe(persisted);
      expect((await readJournal(db.spoolDir)).length).toBe(0);
      expect((await admin(target, '{ spoolStatus { setAsideCount } }')).spoolStatus).toEqual({
        setAsideCount: 0,
      });
    },
  );

  faultTest(
    'surrogates and NUL inside metadata and toolCalls round-trip exactly, stored live and through the journal during an outage',
    async () => {
      const db = await database();
      const target = await server({ ...db.env, DB_RETRY_INTERVAL_MS: '200' });
      const metadata = {
        high: 'y\ud800',
        low: 'y\udc00',
        nul: 'a\u0000b',
        'key\ud800': ['\udc00', { deep: '\u0000' }],
        pair: 'emoji \ud83d\ude00',
      };
      const toolCalls = [{ name: 'x\udfff', arguments: { text: '\ud83d', nul: '\u0000' } }];
      const input = (sessionId: string, content: string) => ({
        sessionId,
        role: 'ASSISTANT',
        content,
        toolCalls,
        metadata,
      });

      const live = await target.gql(APPEND_FULL, { input: input('json', 'live') });
      expect(live.errors).toBeUndefined();
      expect(live.data.appendMessage.status).toBe('PERSISTED');

      await db.beginOutage();
      const queued = await target.gql(APPEND_FULL, { input: input('json', 'journaled') });
      expect(queued.errors).toBeUndefined();
      expect(queued.data.appendMessage.status).toBe('QUEUED');
      await db.endOutage();

      // Pins: JSON fields keep any string, stored as JSON text, and so does the journal.
      await eventually(async () => {
        const stored = await readMessages(target, 'json');
        expect(stored?.messages.map((message) => message.content)).toEqual(['live', 'journaled']);
        for (const message of stored?.messages ?? []) {
          expect(message.metadata).toEqual(metadata);
          expect(message.toolCalls).toEqual(toolCalls);
          // toEqual compares the strings code unit by code unit; say it outright as well.
          expect((message.metadata as typeof metadata).high).toBe('y\ud800');
          expect(Object.keys(message.metadata as object)).toContain('key\ud800');
        }
      }, 15_000);
    },
  );

  faultTest(
    'a fresh append the database refuses answers MESSAGE_REFUSED, stores nothing, and the session goes on',
    async () => {
      const db = await database();
      const target = await server({ ...db.env, DB_RETRY_INTERVAL_MS: '200' });
      const before = await appendMessage(target, 'live', 'before');
      expect(before.status).toBe('PERSISTED');
      await db.refusePoison();

      const refused = await target.gql(APPEND_FULL, {
        input: { sessionId: 'live', role: 'USER', content: 'poison', clientMessageId: 'p-1' },
      });
      // Pins: a refusal of a fresh append goes back to its client (durable.accept's `refused`).
      expect(refused.data).toBeNull();
      expect(refused.errors?.[0]?.extensions?.code).toBe('MESSAGE_REFUSED');
      expect(refused.errors?.[0]?.message).toMatch(/poison/);
      // A batch holding it is refused whole: stored atomically or not at all.
      const batch = await target.gql(APPEND_MANY, {
        input: {
          sessionId: 'live',
          messages: [
            { role: 'USER', content: 'batch-1' },
            { role: 'USER', content: 'poison' },
          ],
        },
      });
      expect(batch.errors?.[0]?.extensions?.code).toBe('MESSAGE_REFUSED');
      expect((await readTranscript(target, 'live')).contents).toEqual(['before']);

      // The session goes on, and the refused client id was never taken.
      const later = await appendMessage(target, 'live', 'later');
      expect(later.status).toBe('PERSISTED');
      const retried = await target.gql(APPEND_FULL, {
        input: { sessionId: 'live', role: 'USER', content: 'fixed', clientMessageId: 'p-1' },
      });
      expect(retried.data.appendMessage).toMatchObject({
        status: 'PERSISTED',
        message: { content: 'fixed' },
      });
      const stored = await readTranscript(target, 'live');
      expect(stored.contents).toEqual(['before', 'later', 'fixed']);
      expect(stored.messageCount).toBe(3);
      // Refused to its client, so not set aside, not journaled, not an outage.
      const status = await admin(
        target,
        '{ pendingStatus { databaseWritable totalPending } spoolStatus { messages setAsideCount } }',
      );
      expect(status).toEqual({
        pendingStatus: { databaseWritable: true, totalPending: 0 },
        spoolStatus: { messages: 0, setAsideCount: 0 },
      });
      expect((await readJournal(db.spoolDir)).length).toBe(0);
    },
  );

  faultTest(
    "setting a refused record aside lets go of its journal line once: another session's QUEUED line in the same segment stays until stored, and survives a kill -9",
    async () => {
      const db = await database();
      // No background retry: the write-back runs exactly when the session's next append does.
      const env = { ...db.env, DB_RETRY_INTERVAL_MS: '0' };
      const target = await server(env);
      await db.refusePoison();
      await db.beginOutage();
      const other = await appendMessage(target, 'other', 'other-1');
      expect(other.status).toBe('QUEUED');
      for (const content of ['during-1', 'poison', 'during-2']) {
        expect((await appendMessage(target, 'memory', content)).status).toBe('QUEUED');
      }
      // One segment holds the four lines.
      const journal = await readJournal(db.spoolDir);
      expect(journal.map((line) => line.content)).toEqual([
        'other-1',
        'during-1',
        'poison',
        'during-2',
      ]);
      expect(journal.segments).toHaveLength(1);
      await db.endOutage();

      // The next append of `memory` writes its backlog back first; the poison is set aside.
      expect((await appendMessage(target, 'memory', 'after')).status).toBe('PERSISTED');
      expect((await readTranscript(target, 'memory')).contents).toEqual([
        'during-1',
        'during-2',
        'after',
      ]);
      await target.waitForOutput(/Set aside message \S+ of session memory/);

      // Pins: QUEUED means in the journal until stored. `other-1` is not stored yet, so its
      // line must still be on disk, and be all the journal owes (the set-aside record must not
      // be let go of twice, which would leave the segment owing nothing and delete it).
      expect((await readJournal(db.spoolDir)).map((line) => line.id)).toContain(other.id);
      const spool = await admin(
        target,
        '{ spoolStatus { messages sessions { sessionId messages } } }',
      );
      expect(spool.spoolStatus).toEqual({
        messages: 1,
        sessions: [{ sessionId: 'other', messages: 1 }],
      });
      // And so a crash now loses nothing answered QUEUED.
      await target.stop('SIGKILL');
      const restarted = await server(env);
      const stored = await readTranscript(restarted, 'other');
      expect(stored.ids).toEqual([other.id]);
      expect(stored.contents).toEqual(['other-1']);
    },
  );

  faultTest(
    'during an outage a record the database will refuse is QUEUED; once it is back the record is set aside (from memory and from disk) while the outage itself is retried and everything else is stored in order',
    async () => {
      const cap = 3;
      const db = await database();
      const target = await server({
        ...db.env,
        DB_RETRY_INTERVAL_MS: '200',
        MAX_PENDING_PER_SESSION: String(cap),
      });
      await db.refusePoison();
      const sent = new Map<string, { content: string; id: string; clientMessageId: string }[]>();
      const send = async (sessionId: string, content: string, status: string) => {
        const clientMessageId = `${sessionId}-${(sent.get(sessionId)?.length ?? 0) + 1}`;
        const answer = await appendMessage(target, sessionId, content, clientMessageId);
        expect({ sessionId, content, status: answer.status }).toEqual({
          sessionId,
          content,
          status,
        });
        sent.set(sessionId, [
          ...(sent.get(sessionId) ?? []),
          { content, id: answer.id, clientMessageId },
        ]);
        return answer.id;
      };
      // `memory`: the poison stays in the in-memory queue; `disk`: it is the oldest of more
      // than the cap, so it leaves memory and is read back from the journal.
      await send('memory', 'before', 'PERSISTED');
      await send('disk', 'before', 'PERSISTED');
      await db.beginOutage();
      await send('memory', 'during-1', 'QUEUED');
      const poisonInMemory = await send('memory', 'poison', 'QUEUED');
      await send('memory', 'during-2', 'QUEUED');
      const poisonOnDisk = await send('disk', 'poison', 'QUEUED');
      for (const content of ['during-1', 'during-2', 'during-3', 'during-4']) {
        await send('disk', content, 'QUEUED');
      }

      // An outage is not a refusal: the background retry keeps failing (each probe a new
      // lastDatabaseErrorAt), nothing is set aside, and the journal holds every message.
      const outageQuery =
        '{ pendingStatus { databaseWritable lastDatabaseErrorAt } spoolStatus { messages setAsideCount } }';
      const seenErrors = new Set<string>();
      await eventually(async () => {
        const status = await admin(target, outageQuery);
        seenErrors.add(status.pendingStatus.lastDatabaseErrorAt);
        expect(status.pendingStatus.databaseWritable).toBe(false);
        expect(status.spoolStatus).toEqual({ messages: 8, setAsideCount: 0 });
        expect(seenErrors.size).toBeGreaterThanOrEqual(3);
      }, 15_000);
      expect(target.output()).not.toMatch(/Set aside/);

      await db.endOutage();
      await eventually(async () => {
        expect((await readTranscript(target, 'memory')).contents).toEqual([
          'before',
          'during-1',
          'during-2',
        ]);
        expect((await readTranscript(target, 'disk')).contents).toEqual([
          'before',
          'during-1',
          'during-2',
          'during-3',
          'during-4',
        ]);
        const status = await admin(
          target,
          '{ pendingStatus { totalPending } spoolStatus { messages } }',
        );
        expect(status).toEqual({
          pendingStatus: { totalPending: 0 },
          spoolStatus: { messages: 0 },
        });
      }, 15_000);
      // Stored in order, with the ids the clients hold, once.
      for (const sessionId of ['memory', 'disk']) {
        const expected = (sent.get(sessionId) ?? []).filter(({ content }) => content !== 'poison');
        const stored = await readTranscript(target, sessionId);
        expect(stored.ids).toEqual(expected.map(({ id }) => id));
        expect(stored.messageCount).toBe(expected.length);
      }

      // Each poison record is kept whole, with the database's reason, in set-aside.jsonl.
      const lines = (await readFile(join(db.spoolDir, 'set-aside.jsonl'), 'utf8'))
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line));
      expect(lines.map((line) => line.messageId).sort()).toEqual(
        [poisonInMemory, poisonOnDisk].sort(),
      );
      for (const line of lines) {
        const sessionId = line.sessionId as string;
        const poison = (sent.get(sessionId) ?? []).find(({ content }) => content === 'poison');
        expect(line.reason).toMatch(/^refused by the database: .*poison/);
        expect(line.record).toMatchObject({
          id: poison?.id,
          sessionId,
          role: 'USER',
          content: 'poison',
          clientMessageId: poison?.clientMessageId,
          toolName: null,
          toolCallId: null,
          toolCalls: null,
          metadata: null,
        });
        expect(typeof line.record.orderKey).toBe('string');
        expect(typeof line.record.acceptedAt).toBe('number');
      }
      // The admin view lists them; the metric counts them; one ERROR line names each.
      const spool = await admin(
        target,
        '{ spoolStatus { setAside { source reason sessionId messageId } setAsideCount } }',
      );
      expect(spool.spoolStatus.setAsideCount).toBe(2);
      expect(
        spool.spoolStatus.setAside.map((entry: any) => [entry.sessionId, entry.messageId]).sort(),
      ).toEqual(
        [
          ['disk', poisonOnDisk],
          ['memory', poisonInMemory],
        ].sort(),
      );
      for (const entry of spool.spoolStatus.setAside) {
        expect(entry.source).toMatch(/^journal-\d{15}-\d{6}-[0-9a-f]{8}\.jsonl$/);
        expect(entry.reason).toMatch(/^refused by the database: .*poison/);
      }
      const metrics = (await target.get('/metrics')).text;
      expect(metricValue(metrics, 'scribe_set_aside_total{reason="refused"}')).toBe(2);
      for (const [sessionId, id] of [
        ['memory', poisonInMemory],
        ['disk', poisonOnDisk],
      ]) {
        // Logged at write-back, on a pipe the reads above can overtake: waited for.
        await target.waitForOutput(`Set aside message ${id} of session ${sessionId}`);
        const errorLines = target
          .output()
          .split('\n')
          .filter((line) => line.includes(' ERROR ') && line.includes(id));
        expect(errorLines).toHaveLength(1);
        expect(errorLines[0]).toContain(`Set aside message ${id} of session ${sessionId}`);
      }

      // The sessions go on being stored.
      await send('memory', 'after', 'PERSISTED');
      await send('disk', 'after', 'PERSISTED');
      expect((await readTranscript(target, 'memory')).contents).toEqual([
        'before',
        'during-1',
        'during-2',
        'after',
      ]);
      expect((await readTranscript(target, 'disk')).contents.slice(-1)).toEqual(['after']);
    },
  );
});
