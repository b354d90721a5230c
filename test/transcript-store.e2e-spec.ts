import { isConstraintViolation } from '../src/database/database-errors.js';
import { SessionQueries } from '../src/database/session-queries.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { MessageStore } from '../src/database/message-store.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

describe.each(databaseKinds())('TypeOrmMessageStore on %s', (database) => {
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

  it('stores several sessions in one transaction and counts each', async () => {
    const a = [record('store-a', 'a0'), record('store-a', 'a1')];
    const b = [record('store-b', 'b0')];
    const results = await sut.write([
      { sessionId: 'store-a', records: a },
      { sessionId: 'store-b', records: b },
    ]);
    expect(results).toEqual([
      { stored: a, revision: 2 },
      { stored: b, revision: 1 },
    ]);
    const [third] = await sut.write([{ sessionId: 'store-a', records: [record('store-a', 'a2')] }]);
    expect(third.revision).toBe(3);

    expect(await stored('store-a')).toEqual(['a0', 'a1', 'a2']);
    expect(await sessions.findMetadata('store-a')).toMatchObject({ messageCount: 3, revision: 3 });
    expect(await sessions.findMetadata('store-b')).toMatchObject({ messageCount: 1, revision: 1 });
    const full = await sessions.loadFull('store-a');
    expect(full?.messages[0]).toEqual(a[0]);
  });

  it('stores nothing of a transaction that fails, and reports a duplicate as a constraint violation', async () => {
    const first = record('store-dup', 'first');
    await sut.write([{ sessionId: 'store-dup', records: [first] }]);

    const failure = await sut
      .write([
        { sessionId: 'store-other', records: [record('store-other', 'lost with the rest')] },
        { sessionId: 'store-dup', records: [{ ...first, content: 'again' }] },
      ])
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    expect(isConstraintViolation(failure)).toBe(true);
    expect(await stored('store-other')).toEqual([]);
    expect(await sessions.findMetadata('store-dup')).toMatchObject({
      messageCount: 1,
      revision: 1,
    });
  });

  it('skips, on replay, what is stored already and repeats of a clientMessageId', async () => {
    const kept = record('store-replay', 'kept', 'c-1');
    await sut.write([{ sessionId: 'store-replay', records: [kept] }]);

    const [replay] = await sut.write([
      {
        sessionId: 'store-replay',
        skipExisting: true,
        records: [
          kept,
          { ...record('store-replay', 'same client id, new acceptance'), clientMessageId: 'c-1' },
          record('store-replay', 'new', 'c-2'),
          record('store-replay', 'repeat within the batch', 'c-2'),
          record('store-replay', 'plain'),
        ],
      },
    ]);

    expect(await stored('store-replay')).toEqual(['kept', 'new', 'plain']);
    expect(replay.stored.map((message) => message.content)).toEqual(['new', 'plain']);
    expect(replay.revision).toBe(3);
    expect(await sessions.findMetadata('store-replay')).toMatchObject({ revision: 3 });
  });

  it('loads a transcript longer than one read page whole and in order', async () => {
    const records = Array.from({ length: 1234 }, (_, i) => record('store-long', `line ${i}`));
    await sut.write([{ sessionId: 'store-long', records: records.slice(0, 1000) }]);
    await sut.write([{ sessionId: 'store-long', records: records.slice(1000) }]);

    const full = await sessions.loadFull('store-long');

    expect(full?.session.messageCount).toBe(1234);
    expect(full?.messages.map((message) => message.id)).toEqual(records.map((r) => r.id));
  });

  it('probes writability without writing', async () => {
    const before = await sessions.listSessions(1000);
    await expect(sut.probeWrite()).resolves.toBeUndefined();
    expect(await sessions.listSessions(1000)).toEqual(before);
  });
});
