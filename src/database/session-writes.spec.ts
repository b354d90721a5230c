import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { type MessageRecord } from '../message/message-record.js';
import { formatOrderKey } from '../message/order-key.js';
import { SQLITE_CHUNK_ROWS } from './message-sql.js';
import { type Statement } from './sql-dialect.js';
import { type SessionWrite } from './message-store.js';
import { writeSessions } from './session-writes.js';
import { StoredAtStamps, type StatementRunner } from './statement-runner.js';

interface Row {
  sessionId: string;
  orderKey: string;
  storedAt: number;
  clientKey: string;
}

/**
 * A database as the write transaction sees it: rows by id; inserts skip ids (or client ids of
 * a session) stored already; the count statement answers revisions; the rollback to the
 * savepoint taken by `begin()` undoes both.
 */
class FakeRunner implements StatementRunner {
  rowsById = new Map<string, Row>();
  readonly statements: string[] = [];
  revisions = new Map<string, number>();
  /** Each count statement's rows: session, creation time and count, in statement order. */
  readonly counted: { id: string; createdAt: number; inserted: number; numbered: number }[][] = [];
  private savepoint: { rows: Map<string, Row>; revisions: Map<string, number> } | null = null;
  // Which of the pending records the next insert statement holds.
  private offset = 0;

  begin(): void {
    this.savepoint = { rows: new Map(this.rowsById), revisions: new Map(this.revisions) };
    this.offset = 0;
  }

  store(record: MessageRecord, storedAt: number): void {
    this.rowsById.set(record.id, {
      sessionId: record.sessionId,
      orderKey: record.orderKey,
      storedAt,
      clientKey: `${record.sessionId}/${record.clientMessageId}`,
    });
  }

  changes(statement: Statement): Promise<number> {
    this.statements.push(kindOf(statement));
    if (statement.sql.startsWith('ROLLBACK TO')) {
      if (!this.savepoint) throw new Error('no savepoint to roll back to');
      this.rowsById = new Map(this.savepoint.rows);
      this.revisions = new Map(this.savepoint.revisions);
      this.offset = 0;
      return Promise.resolve(0);
    }
    if (!statement.sql.startsWith('INSERT INTO "messages"')) return Promise.resolve(0);
    // SQLite binds the stamp last in every row.
    const storedAt = statement.values.at(-1) as number;
    const rows = statement.sql.split('), (').length;
    const records = this.pendingRecords.slice(this.offset, this.offset + rows);
    this.offset += rows;
    // The order key is the third value of a row (id and session come first, none is NULL).
    const perRow = statement.values.length / rows;
    let inserted = 0;
    for (const [row, pending] of records.entries()) {
      const record = { ...pending, orderKey: statement.values[row * perRow + 2] as string };
      const clientKey = `${record.sessionId}/${record.clientMessageId}`;
      const clash = [...this.rowsById.values()].some(
        (row) => record.clientMessageId !== null && row.clientKey === clientKey,
      );
      if (this.rowsById.has(record.id) || clash) continue;
      this.store(record, storedAt);
      inserted += 1;
    }
    return Promise.resolve(inserted);
  }

  rows(statement: Statement): Promise<Record<string, unknown>[]> {
    this.statements.push(kindOf(statement));
    if (statement.sql.startsWith('SELECT "id", "revision"')) {
      return Promise.resolve(
        (statement.values as string[]).map((id) => ({ id, revision: this.revisions.get(id) ?? 0 })),
      );
    }
    if (statement.sql.includes('(SELECT MAX("order_key")')) {
      return Promise.resolve(
        (statement.values as string[]).flatMap((sessionId) => {
          const keys = [...this.rowsById.values()]
            .filter((row) => row.sessionId === sessionId)
            .map((row) => row.orderKey)
            .sort();
          // As the database answers: null for a session without messages.
          return [{ session_id: sessionId, max_key: keys.at(-1) ?? null }];
        }),
      );
    }
    if (statement.sql.startsWith('SELECT')) {
      const [storedAt, ...ids] = statement.values as [number, ...string[]];
      return Promise.resolve(
        ids.flatMap((id) => {
          const row = this.rowsById.get(id);
          return row && row.storedAt === storedAt ? [{ id, order_key: row.orderKey }] : [];
        }),
      );
    }
    const ids = statement.values.filter((_, index) => index % 5 === 0) as string[];
    const createdAt = statement.values.filter((_, index) => index % 5 === 1) as number[];
    const inserted = statement.values.filter((_, index) => index % 5 === 3) as number[];
    const numbered = statement.values.filter((_, index) => index % 5 === 4) as number[];
    this.counted.push(
      ids.map((id, index) => ({
        id,
        createdAt: createdAt[index],
        inserted: inserted[index],
        numbered: numbered[index],
      })),
    );
    return Promise.resolve(
      ids.map((id, index) => {
        const revision = (this.revisions.get(id) ?? 0) + numbered[index];
        this.revisions.set(id, revision);
        return { id, revision };
      }),
    );
  }

  /** The records of the write under way (the fake does not parse the SQL's values). */
  pendingRecords: MessageRecord[] = [];
}

function kindOf(statement: Statement): string {
  return statement.sql.split(' ').slice(0, 3).join(' ');
}

/**
 * The statements up to the count when the optimistic write found rows stored already: rolled
 * back, then sessions created, rows inserted and which of them are new asked.
 */
const FOUND_STORED = [
  'INSERT INTO "sessions"',
  'INSERT INTO "messages"',
  'ROLLBACK TO SAVEPOINT',
  'INSERT INTO "sessions"',
  'SELECT "id", "revision"',
  'INSERT INTO "messages"',
  'SELECT "id", "order_key"',
];

describe(writeSessions.name, () => {
  let run: FakeRunner;

  beforeEach(() => {
    run = new FakeRunner();
  });

  async function write(records: MessageRecord[], storedAt: number) {
    run.pendingRecords = records;
    run.begin();
    const [result] = await writeSessions(
      run,
      'sqlite',
      [{ sessionId: records[0].sessionId, records }],
      storedAt,
      'b0b',
    );
    return result;
  }

  it('writes new records in two statements: the counters (creating the session), then the rows', async () => {
    const records = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];

    expect(await write(records, 100)).toEqual({
      inserted: records,
      skipped: [],
      seqs: [1, 2],
      revision: 2,
    });
    expect(run.statements).toEqual(['INSERT INTO "sessions"', 'INSERT INTO "messages"']);
    expect(run.revisions.get('s')).toBe(2);
    // The next write's numbers come after.
    expect((await write([acceptedRecord('s', 'c')], 101)).seqs).toEqual([3]);
  });

  it('counts each session once, by all its records, across the writes it shares a transaction with', async () => {
    const first = [acceptedRecord('a', '1'), acceptedRecord('a', '2')];
    const second = [acceptedRecord('b', '1')];
    run.pendingRecords = [...first, ...second];
    run.begin();

    const results = await writeSessions(
      run,
      'sqlite',
      [
        { sessionId: 'b', records: second },
        { sessionId: 'a', records: first },
      ],
      100,
      'b0b',
    );

    expect(results).toEqual([
      { inserted: second, skipped: [], seqs: [1], revision: 1 },
      { inserted: first, skipped: [], seqs: [1, 2], revision: 2 },
    ]);
  });

  it('runs nothing for writes without records', async () => {
    run.begin();
    expect(await writeSessions(run, 'sqlite', [{ sessionId: 's', records: [] }], 1, 'b0b')).toEqual(
      [{ inserted: [], skipped: [], seqs: [], revision: null }],
    );
    expect(run.statements).toEqual([]);
  });

  it('counts sessions in id order, each created at its oldest record, and gives a write without records no revision', async () => {
    const late = acceptedRecord('b', 'late');
    const early = { ...acceptedRecord('b', 'early'), acceptedAt: late.acceptedAt - 5 };
    const a = acceptedRecord('a', 'a');
    run.pendingRecords = [late, early, a];
    run.begin();

    const results = await writeSessions(
      run,
      'sqlite',
      [
        { sessionId: 'b', records: [late, early] },
        { sessionId: 'c', records: [] },
        { sessionId: 'a', records: [a] },
      ],
      100,
      'b0b',
    );

    expect(run.counted).toEqual([
      [
        { id: 'a', createdAt: a.acceptedAt, inserted: 1, numbered: 1 },
        { id: 'b', createdAt: early.acceptedAt, inserted: 2, numbered: 2 },
      ],
    ]);
    expect(results.map((result) => result.revision)).toEqual([2, null, 1]);
  });

  it('inserts in statements of SQLITE_CHUNK_ROWS rows, and no empty one after a full chunk', async () => {
    const records = Array.from({ length: SQLITE_CHUNK_ROWS + 1 }, (_, n) =>
      acceptedRecord('s', `m${n}`),
    );

    expect(await write(records, 100)).toEqual({
      inserted: records,
      skipped: [],
      seqs: records.map((_, index) => index + 1),
      revision: records.length,
    });
    expect(run.statements.filter((kind) => kind === 'INSERT INTO "messages"')).toHaveLength(2);

    run.statements.length = 0;
    const more = records.slice(1).map((record) => acceptedRecord('s', record.content));
    await write(more, 101);
    expect(run.statements.filter((kind) => kind === 'INSERT INTO "messages"')).toHaveLength(1);
  });

  it('when rows were stored already, asks which only of the chunks that skipped some, and counts every chunk', async () => {
    const records = Array.from({ length: SQLITE_CHUNK_ROWS + 1 }, (_, n) =>
      acceptedRecord('s', `m${n}`),
    );
    const stored = records[SQLITE_CHUNK_ROWS];
    run.store(stored, 50);

    const result = await write(records, 100);

    expect(result).toEqual({
      inserted: records.slice(0, SQLITE_CHUNK_ROWS),
      skipped: [stored],
      seqs: records.slice(0, SQLITE_CHUNK_ROWS).map((_, index) => index + 1),
      revision: SQLITE_CHUNK_ROWS,
    });
    expect(run.statements.filter((kind) => kind === 'SELECT "id", "order_key"')).toHaveLength(1);
    expect(run.statements.filter((kind) => kind === 'INSERT INTO "messages"')).toHaveLength(4);
  });

  it('asks which were inserted when some were stored already, and tells them apart by order key and stamp', async () => {
    const stored = acceptedRecord('s', 'stored before');
    run.store(stored, 100);
    // Another instance stored this client id first, with an id and order key of its own.
    const raced = acceptedRecord('s', 'raced', { clientMessageId: 'c-1' });
    run.store({ ...raced, id: 'other-id', orderKey: 'other-key' }, 101);
    const fresh = [acceptedRecord('s', 'fresh'), acceptedRecord('s', 'fresh too')];

    // Four records: one SQLite chunk.
    const result = await write([stored, raced, ...fresh], 101);

    // The skipped records took numbers 1 and 2, left as gaps.
    expect(result).toEqual({
      inserted: fresh,
      skipped: [stored, raced],
      seqs: [3, 4],
      revision: 4,
    });
    // The optimistic count is rolled back; the message count moves by what was inserted, and
    // the revision to the last number an inserted record took.
    expect(run.statements).toEqual([...FOUND_STORED, 'INSERT INTO "sessions"']);
    expect(run.counted.at(-1)).toEqual([
      { id: 's', createdAt: stored.acceptedAt, inserted: 2, numbered: 4 },
    ]);
    expect(run.revisions.get('s')).toBe(4);
  });

  it('answers a write whose every record was stored already with no revision, counting nothing', async () => {
    const stored = acceptedRecord('s', 'stored before');
    run.store(stored, 100);

    expect(await write([stored], 101)).toEqual({
      inserted: [],
      skipped: [stored],
      seqs: [],
      revision: null,
    });
    // No counter moves: the optimistic count is rolled back, and no other runs.
    expect(run.statements).toEqual(FOUND_STORED);
    expect(run.revisions.has('s')).toBe(false);
  });
});

describe('writeSessions with an answered append (SessionWrite.after)', () => {
  let run: FakeRunner;
  const STORED_MAX = formatOrderKey(5000, 7, 'other');

  beforeEach(() => {
    run = new FakeRunner();
  });

  /** Records of `sessionId` timed by a clock at `ms`, in order. */
  function timed(sessionId: string, ms: number, contents: string[]): MessageRecord[] {
    return contents.map((content, index) =>
      acceptedRecord(sessionId, content, { orderKey: formatOrderKey(ms, index, 'b0b') }),
    );
  }

  async function write(writes: SessionWrite[], storedAt = 100) {
    run.pendingRecords = writes.flatMap((one) => one.records);
    run.begin();
    return writeSessions(run, 'sqlite', writes, storedAt, 'b0b');
  }

  const keysOf = (records: MessageRecord[]) =>
    records.map((record) => run.rowsById.get(record.id)?.orderKey);

  it("stores an append timed before the stored max after it, in order, in this instance's name", async () => {
    run.store(acceptedRecord('s', 'other', { orderKey: STORED_MAX }), 50);
    const records = timed('s', 1000, ['a', 'b']);
    const issued = records.map((record) => record.orderKey);
    const derived = [formatOrderKey(5000, 8, 'b0br'), formatOrderKey(5000, 9, 'b0br')];

    const [result] = await write([{ sessionId: 's', records, after: 'stored' }]);

    expect(result).toEqual({
      inserted: records,
      skipped: [],
      seqs: [1, 2],
      revision: 2,
      orderKeys: derived,
    });
    expect(keysOf(records)).toEqual(derived);
    // The records keep their keys until the write committed (numberInserted).
    expect(records.map((record) => record.orderKey)).toEqual(issued);
    // The max is read once the upsert of the counters holds the session row.
    expect(run.statements).toEqual([
      'INSERT INTO "sessions"',
      'SELECT "id" AS',
      'INSERT INTO "messages"',
    ]);
  });

  it('moves every record of the append when only its first is at or before the max', async () => {
    const records = [
      acceptedRecord('s', 'a', { orderKey: STORED_MAX }),
      acceptedRecord('s', 'b', { orderKey: formatOrderKey(9000, 0, 'b0b') }),
    ];
    run.store(acceptedRecord('s', 'other', { orderKey: STORED_MAX }), 50);

    const [result] = await write([{ sessionId: 's', records, after: 'stored' }]);

    expect(result.orderKeys).toEqual([
      formatOrderKey(5000, 8, 'b0br'),
      formatOrderKey(5000, 9, 'b0br'),
    ]);
  });

  it('keeps the keys of an append already after the max, at the cost of the one statement', async () => {
    run.store(acceptedRecord('s', 'other', { orderKey: STORED_MAX }), 50);
    const records = timed('s', 5001, ['a']);

    const [result] = await write([{ sessionId: 's', records, after: 'stored' }]);

    expect(result).toEqual({ inserted: records, skipped: [], seqs: [1], revision: 1 });
    expect(keysOf(records)).toEqual([formatOrderKey(5001, 0, 'b0b')]);
    expect(run.statements).toHaveLength(3);
  });

  it("keeps the keys of a new session's append: nothing is stored to sort after", async () => {
    const records = timed('s', 10, ['a']);

    const [result] = await write([{ sessionId: 's', records, after: 'stored' }]);

    expect(result.orderKeys).toBeUndefined();
    expect(keysOf(records)).toEqual([records[0].orderKey]);
  });

  it('leaves write-back and replays as they were accepted, and reads nothing more for them', async () => {
    run.store(acceptedRecord('s', 'other', { orderKey: STORED_MAX }), 50);
    const records = timed('s', 1000, ['queued']);

    const [result] = await write([{ sessionId: 's', records }]);

    expect(result.orderKeys).toBeUndefined();
    expect(keysOf(records)).toEqual([formatOrderKey(1000, 0, 'b0b')]);
    expect(run.statements).toEqual(['INSERT INTO "sessions"', 'INSERT INTO "messages"']);
  });

  it('reads the max of the marked sessions of a group only, in one statement', async () => {
    run.store(acceptedRecord('a', 'other', { orderKey: STORED_MAX }), 50);
    run.store(acceptedRecord('b', 'other', { orderKey: STORED_MAX }), 50);
    run.store(acceptedRecord('c', 'other', { orderKey: STORED_MAX }), 50);
    const [c, a, b] = [timed('c', 1, ['c']), timed('a', 1, ['a']), timed('b', 1, ['b'])];
    const asked: unknown[][] = [];
    const rows = run.rows.bind(run);
    run.rows = (statement) => {
      if (statement.sql.includes('MAX(')) asked.push(statement.values);
      return rows(statement);
    };

    const results = await write([
      { sessionId: 'c', records: c, after: 'stored' },
      { sessionId: 'b', records: b },
      { sessionId: 'a', records: a, after: 'stored' },
    ]);

    expect(asked).toEqual([['a', 'c']]);
    expect(results.map((result) => result.orderKeys)).toEqual([
      [formatOrderKey(5000, 8, 'b0br')],
      undefined,
      [formatOrderKey(5000, 8, 'b0br')],
    ]);
    expect(keysOf(b)).toEqual([b[0].orderKey]);
  });

  it('when rows were stored already, reads the max again after the locks, and tells its rows by the keys it gave', async () => {
    run.store(acceptedRecord('s', 'other', { orderKey: STORED_MAX }), 50);
    const stored = timed('s', 4000, ['stored before'])[0];
    run.store(stored, 60);
    const fresh = timed('s', 1000, ['fresh', 'fresh too']);
    const derived = [
      formatOrderKey(5000, 8, 'b0br'),
      formatOrderKey(5000, 9, 'b0br'),
      formatOrderKey(5000, 10, 'b0br'),
    ];

    const [result] = await write([
      { sessionId: 's', records: [stored, ...fresh], after: 'stored' },
    ]);

    expect(result).toEqual({
      inserted: fresh,
      skipped: [stored],
      seqs: [2, 3],
      revision: 3,
      orderKeys: derived.slice(1),
    });
    expect(keysOf(fresh)).toEqual(derived.slice(1));
    expect(run.statements).toEqual([
      'INSERT INTO "sessions"',
      'SELECT "id" AS',
      'INSERT INTO "messages"',
      'ROLLBACK TO SAVEPOINT',
      'INSERT INTO "sessions"',
      'SELECT "id", "revision"',
      'SELECT "id" AS',
      'INSERT INTO "messages"',
      'SELECT "id", "order_key"',
      // Three records: SQLite chunks of two and one.
      'INSERT INTO "messages"',
      'INSERT INTO "sessions"',
    ]);
  });

  it('keeps the keys when the stored max is of no format it can pass', async () => {
    run.store(acceptedRecord('s', 'foreign', { orderKey: 'zzz' }), 50);
    const records = timed('s', 1000, ['a']);

    const [result] = await write([{ sessionId: 's', records, after: 'stored' }]);

    expect(result.orderKeys).toBeUndefined();
    expect(keysOf(records)).toEqual([records[0].orderKey]);
  });
});

describe(StoredAtStamps.name, () => {
  it('follows the clock but never gives the same stamp twice', () => {
    let now = 1000;
    const sut = new StoredAtStamps(() => now);

    const stamps = [sut.next(), sut.next(), sut.next()];
    now = 1001;
    stamps.push(sut.next());
    now = 5000;
    stamps.push(sut.next());

    expect(stamps).toEqual([1000, 1001, 1002, 1003, 5000]);
  });
});
