import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { type MessageRecord } from '../message/message-record.js';
import { type Statement } from './message-sql.js';
import { StoredAtStamps, writeSessions, type StatementRunner } from './session-writes.js';

interface Row {
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
  private savepoint: { rows: Map<string, Row>; revisions: Map<string, number> } | null = null;

  begin(): void {
    this.savepoint = { rows: new Map(this.rowsById), revisions: new Map(this.revisions) };
  }

  store(record: MessageRecord, storedAt: number): void {
    this.rowsById.set(record.id, {
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
      return Promise.resolve(0);
    }
    if (!statement.sql.startsWith('INSERT INTO "messages"')) return Promise.resolve(0);
    const storedAt = Number(/, (\d+)\)/.exec(statement.sql)?.[1]);
    let inserted = 0;
    for (const record of this.pendingRecords) {
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
    const inserted = statement.values.filter((_, index) => index % 5 === 3) as number[];
    return Promise.resolve(
      ids.map((id, index) => {
        const revision = (this.revisions.get(id) ?? 0) + inserted[index];
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
    );
    return result;
  }

  it('writes new records in two statements: the counters (creating the session), then the rows', async () => {
    const records = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];

    expect(await write(records, 100)).toEqual({ inserted: records, skipped: [], revision: 2 });
    expect(run.statements).toEqual(['INSERT INTO "sessions"', 'INSERT INTO "messages"']);
    expect(run.revisions.get('s')).toBe(2);
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
    );

    expect(results).toEqual([
      { inserted: second, skipped: [], revision: 1 },
      { inserted: first, skipped: [], revision: 2 },
    ]);
  });

  it('asks which were inserted when some were stored already, and tells them apart by order key and stamp', async () => {
    const stored = acceptedRecord('s', 'stored before');
    run.store(stored, 100);
    // Another instance stored this client id first, with an id and order key of its own.
    const raced = acceptedRecord('s', 'raced', { clientMessageId: 'c-1' });
    run.store({ ...raced, id: 'other-id', orderKey: 'other-key' }, 101);
    const fresh = acceptedRecord('s', 'fresh');

    const result = await write([stored, raced, fresh], 101);

    expect(result).toEqual({ inserted: [fresh], skipped: [stored, raced], revision: 1 });
    // The optimistic count is rolled back, and the counters move by what was inserted.
    expect(run.statements).toEqual([...FOUND_STORED, 'INSERT INTO "sessions"']);
    expect(run.revisions.get('s')).toBe(1);
  });

  it('answers a write whose every record was stored already with no revision, counting nothing', async () => {
    const stored = acceptedRecord('s', 'stored before');
    run.store(stored, 100);

    expect(await write([stored], 101)).toEqual({ inserted: [], skipped: [stored], revision: null });
    // No counter moves: the optimistic count is rolled back, and no other runs.
    expect(run.statements).toEqual(FOUND_STORED);
    expect(run.revisions.has('s')).toBe(false);
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
