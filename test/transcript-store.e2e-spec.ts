import { jest } from '@jest/globals';
import { getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { classifyDatabaseError } from '../src/database/database-errors.js';
import { SCRIBE_CONNECTION } from '../src/database/database.tokens.js';
import { SessionEntity } from '../src/database/entities/session.entity.js';
import { sessionRecordFromEntity } from '../src/database/record-mappers.js';
import { MessageStore } from '../src/database/message-store.js';
import { type ReadyMessageStore } from '../src/database/ready-message-store.js';
import { SessionListQueries } from '../src/database/session-list-queries.js';
import { SessionQueries } from '../src/database/session-queries.js';
import { type SqliteMessageStore } from '../src/database/sqlite-message-store.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

describe.each(databaseKinds())('the message store on %s', (database) => {
  let app: TestApp;
  let sut: MessageStore;
  let sessions: SessionQueries;
  const record = (sessionId: string, content: string, clientMessageId: string | null = null) =>
    acceptedRecord(sessionId, content, {
      clientMessageId,
      toolCalls: [{ name: 'f', arguments: { n: 1 } }],
    });

  async function stored(sessionId: string): Promise<string[]> {
    const full = await sessions.loadFull(sessionId);
    return full?.messages.map((message) => message.content) ?? [];
  }

  beforeAll(async () => {
    app = await createTestApp(database);
    sut = app.app.get(MessageStore);
    sessions = app.app.get(SessionQueries);
  });

  afterAll(async () => {
    await app.close();
  });

  it('counts what a full load read, when a write commits between the session row and the pages', async () => {
    await sut.write([{ sessionId: 'store-race', records: [record('store-race', 'r0')] }]);
    const listMessages = sessions.listMessages.bind(sessions);
    const spy = jest.spyOn(sessions, 'listMessages').mockImplementationOnce(async (...args) => {
      // The session row was read with one message; this write lands before the first page.
      await sut.write([{ sessionId: 'store-race', records: [record('store-race', 'r1')] }]);
      return listMessages(...args);
    });
    try {
      const full = await sessions.loadFull('store-race');
      expect(full?.messages.map((message) => message.content)).toEqual(['r0', 'r1']);
      expect(full?.session.messageCount).toBe(2);
      expect(full?.session.revision).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('stores several sessions in one transaction and counts each', async () => {
    const a = [record('store-a', 'a0'), record('store-a', 'a1')];
    const b = [record('store-b', 'b0')];
    const results = await sut.write([
      { sessionId: 'store-a', records: a },
      { sessionId: 'store-b', records: b },
    ]);
    // Each message is numbered in its session's commit order, the revision the last number.
    expect(results).toEqual([
      { inserted: a, skipped: [], seqs: [1, 2], revision: 2 },
      { inserted: b, skipped: [], seqs: [1], revision: 1 },
    ]);
    expect([...a, ...b].map((message) => message.commitSeq)).toEqual([1, 2, 1]);
    const [third] = await sut.write([{ sessionId: 'store-a', records: [record('store-a', 'a2')] }]);
    expect(third).toMatchObject({ seqs: [3], revision: 3 });

    expect(await stored('store-a')).toEqual(['a0', 'a1', 'a2']);
    expect(await sessions.findMetadata('store-a')).toMatchObject({ messageCount: 3, revision: 3 });
    expect(await sessions.findMetadata('store-b')).toMatchObject({ messageCount: 1, revision: 1 });
    const full = await sessions.loadFull('store-a');
    expect(full?.messages[0]).toEqual(a[0]);
  });

  it("reads a session's row as TypeORM reads its entity, and none for an unknown id", async () => {
    await sut.write([{ sessionId: 'store-row', records: [record('store-row', 'x')] }]);
    const repository = app.app
      .get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION))
      .getRepository(SessionEntity);
    await repository.update('store-row', {
      title: 'A title \u{1F600}',
      metadata: { nested: { list: [1, 'two', null] }, big: 2 ** 53 - 1 },
    });

    const sessionRow = await sessions.findMetadata('store-row');

    expect(sessionRow).toEqual(
      sessionRecordFromEntity((await repository.findOneBy({ id: 'store-row' }))!),
    );
    expect(sessionRow).toMatchObject({
      title: 'A title \u{1F600}',
      metadata: { nested: { list: [1, 'two', null] }, big: 2 ** 53 - 1 },
      messageCount: 1,
      revision: 1,
    });
    expect(typeof sessionRow?.createdAt).toBe('number');
    expect(await sessions.findMetadata('store-no-such-row')).toBeNull();
  });

  it('skips what is stored already (same id, or same client id in the session) and counts only what it inserted', async () => {
    const kept = record('store-replay', 'kept', 'c-1');
    await sut.write([{ sessionId: 'store-replay', records: [kept] }]);
    const sameClientId = {
      ...record('store-replay', 'same client id, new acceptance'),
      clientMessageId: 'c-1',
    };
    const repeat = record('store-replay', 'repeat within the batch', 'c-2');

    const [replay] = await sut.write([
      {
        sessionId: 'store-replay',
        records: [
          kept,
          sameClientId,
          record('store-replay', 'new', 'c-2'),
          repeat,
          record('store-replay', 'plain'),
        ],
      },
    ]);

    expect(await stored('store-replay')).toEqual(['kept', 'new', 'plain']);
    expect(replay.inserted.map((message) => message.content)).toEqual(['new', 'plain']);
    expect(replay.skipped).toEqual([kept, sameClientId, repeat]);
    // Every record tried took a number (kept was 1): the skipped ones leave gaps, and the
    // revision is the last number an inserted one took.
    expect(replay.seqs).toEqual([4, 6]);
    expect(replay.revision).toBe(6);
    expect(await sessions.findMetadata('store-replay')).toMatchObject({
      messageCount: 3,
      revision: 6,
    });
    const full = await sessions.loadFull('store-replay');
    expect(full?.messages.map((message) => message.commitSeq)).toEqual([1, 4, 6]);
  });

  it('answers a write whose every record is stored with no revision, and changes nothing', async () => {
    const first = record('store-again', 'once');
    await sut.write([{ sessionId: 'store-again', records: [first] }]);
    const before = await sessions.findMetadata('store-again');

    const [again] = await sut.write([{ sessionId: 'store-again', records: [first] }]);

    expect(again).toEqual({ inserted: [], skipped: [first], seqs: [], revision: null });
    expect(await sessions.findMetadata('store-again')).toEqual(before);
  });

  it('stores nothing of a transaction the database refuses, and says it is a refusal', async () => {
    const failure = await sut
      .write([
        { sessionId: 'store-other', records: [record('store-other', 'lost with the rest')] },
        // A role longer than its column (16) is refused by PostgreSQL; SQLite's column types
        // are advisory, so there the refusal is a NOT NULL one.
        {
          sessionId: 'store-bad',
          records: [
            {
              ...record('store-bad', 'bad'),
              ...(database === 'postgres' ? { role: 'X'.repeat(17) } : { content: null }),
            } as never,
          ],
        },
      ])
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    expect(classifyDatabaseError(failure).kind).toBe('refused');
    expect(await stored('store-other')).toEqual([]);
    expect(await sessions.findMetadata('store-other')).toBeNull();
  });

  it('loads a transcript longer than one read page whole and in order', async () => {
    const records = Array.from({ length: 1234 }, (_, i) => record('store-long', `line ${i}`));
    await sut.write([{ sessionId: 'store-long', records: records.slice(0, 1000) }]);
    await sut.write([{ sessionId: 'store-long', records: records.slice(1000) }]);

    const full = await sessions.loadFull('store-long');

    expect(full?.session.messageCount).toBe(1234);
    expect(full?.messages.map((message) => message.id)).toEqual(records.map((r) => r.id));
  });

  it('commits a heartbeat row that changes no session', async () => {
    const list = () => app.app.get(SessionListQueries).listSessions(1000, undefined, {}, 1 << 30);
    const before = await list();

    await sut.heartbeat();
    await sut.heartbeat();

    expect(await list()).toEqual(before);
  });
});

describe('the SQLite message store', () => {
  it('writes through a connection of its own in WAL mode, with SQLITE_SYNCHRONOUS applied', async () => {
    for (const [mode, expected] of [
      [undefined, 2],
      ['NORMAL', 1],
    ] as const) {
      const app = await createTestApp('sqlite', mode ? { SQLITE_SYNCHRONOUS: mode } : {});
      try {
        // Nest hands out the store behind its readiness guard (ReadyMessageStore).
        const sut = app.app.get<ReadyMessageStore>(MessageStore).inner as SqliteMessageStore;
        expect(await sut.connectionSettings()).toEqual({
          journalMode: 'wal',
          synchronous: expected,
        });
      } finally {
        await app.close();
      }
    }
  });

  it.each(['deleted', 'replaced'] as const)(
    'fails every write for good once its database file was %s, instead of committing into a file nobody will read',
    async (what) => {
      const app = await createTestApp('sqlite');
      try {
        const sut = app.app.get(MessageStore);
        await sut.write([{ sessionId: 'file', records: [acceptedRecord('file', 'before')] }]);
        const path = join(app.dataDir, 'scribe.sqlite');
        if (what === 'deleted') {
          await rename(path, `${path}.moved`);
        } else {
          await rename(path, `${path}.moved`);
          await writeFile(path, '');
        }

        const failures = await Promise.all(
          [
            () => sut.write([{ sessionId: 'file', records: [acceptedRecord('file', 'after')] }]),
            () => sut.heartbeat(),
          ].map((call) =>
            call().then(
              () => 'committed',
              (error: Error) => error.message,
            ),
          ),
        );

        for (const failure of failures) {
          expect(failure).toContain(`the database file ${path} was ${what} while open`);
        }
        expect(
          classifyDatabaseError(await sut.heartbeat().catch((error: unknown) => error)).kind,
        ).toBe('unavailable');
      } finally {
        await app.close();
      }
    },
  );
});
