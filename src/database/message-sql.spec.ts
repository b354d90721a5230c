import { type MessageRecord } from '../message/message-record.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import {
  INSERT_CHUNK_ROWS,
  ROLLBACK_TO_BEGIN,
  SQLITE_CHUNK_ROWS,
  beginWrite,
  countMessages,
  findInserted,
  inInsertOrder,
  insertChunks,
  insertMessages,
  insertMissingSessions,
} from './message-sql.js';

/** The VALUES rows of an insert, as written. */
function rowsOf(sql: string): string[] {
  const values = sql.slice(sql.indexOf(' VALUES ') + 8, sql.lastIndexOf(' ON CONFLICT'));
  return values.slice(1, -1).split('), (');
}

describe(inInsertOrder.name, () => {
  const withId = (id: string, content = id) => ({ ...acceptedRecord('s', content), id });

  it('inserts by id on PostgreSQL, each record with its own commit number', () => {
    const [c, a, b] = [withId('c'), withId('a'), withId('b')];

    expect(inInsertOrder('postgres', [c, a, b], [7, 5, 6])).toEqual({
      records: [a, b, c],
      seqs: [5, 6, 7],
    });
  });

  it.each<[string, (record: MessageRecord) => MessageRecord]>([
    ['id', (record) => ({ ...record, id: 'c' })],
    ['client id in the session', (record) => ({ ...record, clientMessageId: 'c-1' })],
    ['order key in the session', (record) => ({ ...record, orderKey: 'k' })],
  ])(
    'keeps the order given when two records claim one %s: the first given is inserted',
    (_, claim) => {
      const [c, a, b] = [withId('c'), withId('a'), withId('b')].map(claim);

      expect(inInsertOrder('postgres', [c, a, b], [7, 5, 6])).toEqual({
        records: [c, a, b],
        seqs: [7, 5, 6],
      });
    },
  );

  it('sorts records of two sessions that share a client id or an order key', () => {
    const c = { ...withId('c'), clientMessageId: 'c-1', orderKey: 'k' };
    const a = { ...withId('a'), sessionId: 'other', clientMessageId: 'c-1', orderKey: 'k' };

    expect(inInsertOrder('postgres', [c, a], [2, 1]).records).toEqual([a, c]);
  });

  it('sorts a longer write wholly by id, whatever the order given', () => {
    const ids = ['m', 'c', 'x', 'a', 'q', 'f', 'b', 'z', 'k', 'e', 'y', 'd'];
    const given = ids.map((id) => withId(id));

    const ordered = inInsertOrder(
      'postgres',
      given,
      ids.map((_, index) => index),
    );

    expect(ordered.records.map((record) => record.id)).toEqual([...ids].sort());
    expect(ordered.seqs).toEqual([...ids].sort().map((id) => ids.indexOf(id)));
  });

  it('inserts in the order given on SQLite', () => {
    const [c, a] = [withId('c'), withId('a')];

    expect(inInsertOrder('sqlite', [c, a], [2, 1])).toEqual({ records: [c, a], seqs: [2, 1] });
  });
});

describe(insertChunks.name, () => {
  const records = (count: number) =>
    Array.from({ length: count }, (_, n) => acceptedRecord('s', `m${n}`));
  const lengths = (chunks: unknown[][]) => chunks.map((chunk) => chunk.length);

  it('cuts SQLite chunks to powers of two up to SQLITE_CHUNK_ROWS, so few statement texts recur', () => {
    expect(SQLITE_CHUNK_ROWS).toBe(256);
    expect(lengths(insertChunks('sqlite', records(800)))).toEqual([256, 256, 256, 32]);
    expect(lengths(insertChunks('sqlite', records(7)))).toEqual([4, 2, 1]);
    expect(lengths(insertChunks('sqlite', records(256)))).toEqual([256]);
    expect(lengths(insertChunks('sqlite', records(1)))).toEqual([1]);
  });

  it('cuts PostgreSQL chunks at INSERT_CHUNK_ROWS, as few round trips as fit', () => {
    expect(INSERT_CHUNK_ROWS).toBe(2000);
    expect(lengths(insertChunks('postgres', records(4001)))).toEqual([2000, 2000, 1]);
    expect(lengths(insertChunks('postgres', records(7)))).toEqual([7]);
  });

  it('keeps every record once, in order, and makes no chunk of nothing', () => {
    const all = records(300);
    expect(insertChunks('sqlite', all).flat()).toEqual(all);
    expect(insertChunks('postgres', all).flat()).toEqual(all);
    expect(insertChunks('sqlite', [])).toEqual([]);
    expect(insertChunks('postgres', [])).toEqual([]);
  });
});

describe(insertMessages.name, () => {
  const plain = acceptedRecord('s', 'plain');
  const tool = acceptedRecord('s', 'tool', {
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCalls: [{ id: 1 }],
  });

  // The bound values of `plain`: the columns a message without tool fields has.
  const plainValues = [plain.id, 's', plain.orderKey, plain.role, 'plain', plain.acceptedAt];

  it('binds only the columns some row has a value in, writing NULL as a literal; binds the SQLite stamp', () => {
    const statement = insertMessages('sqlite', [plain, plain], 1234, [5, 6]);

    expect(rowsOf(statement.sql)).toEqual([
      '?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, NULL, NULL, NULL, NULL, NULL, ?, ?',
      '?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, NULL, NULL, NULL, NULL, NULL, ?, ?',
    ]);
    expect(statement.values).toEqual([...plainValues, 5, 1234, ...plainValues, 6, 1234]);
  });

  it('gives two SQLite inserts of as many rows with the same columns the same text, whatever the stamp', () => {
    const other = acceptedRecord('t', 'other');
    expect(insertMessages('sqlite', [plain], 1, [1]).sql).toBe(
      insertMessages('sqlite', [other], 2, [9]).sql,
    );
    // On PostgreSQL the stamp is written into the text.
    expect(insertMessages('postgres', [plain], 1, [1]).sql).not.toBe(
      insertMessages('postgres', [other], 2, [1]).sql,
    );
  });

  it('binds a column for every row once any row has it, and JSON as text', () => {
    const statement = insertMessages('sqlite', [plain, tool], 1, [3, 4]);

    expect(rowsOf(statement.sql)[0]).toBe(
      '?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, NULL, NULL, NULL, NULL, NULL, ?, ?',
    );
    expect(statement.values.slice(0, 11)).toEqual([
      ...plainValues.slice(0, 5),
      null,
      null,
      null,
      plain.acceptedAt,
      3,
      1,
    ]);
    expect(statement.values.slice(11)).toEqual([
      tool.id,
      's',
      tool.orderKey,
      tool.role,
      'tool',
      'c-1',
      'search',
      '[{"id":1}]',
      tool.acceptedAt,
      4,
      1,
    ]);
  });

  it("binds an imported message's revision, edit and redaction, NULL for a row that lacks them", () => {
    const edited = acceptedRecord('s', 'edited', {
      createdAt: 100,
      revision: 2,
      editedAt: 200,
      redactedAt: null,
      redactionReason: null,
    });
    const redacted = acceptedRecord('s', '', {
      createdAt: 100,
      revision: 3,
      editedAt: null,
      redactedAt: 300,
      redactionReason: 'spam',
    });

    const statement = insertMessages('sqlite', [plain, edited, redacted], 9, [1, 2, 3]);

    expect(rowsOf(statement.sql)[0]).toBe(
      '?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?',
    );
    expect(statement.values).toEqual([
      ...plainValues,
      null,
      null,
      null,
      null,
      null,
      1,
      9,
      ...[edited.id, 's', edited.orderKey, edited.role, 'edited', edited.acceptedAt],
      100,
      2,
      200,
      null,
      null,
      2,
      9,
      ...[redacted.id, 's', redacted.orderKey, redacted.role, '', redacted.acceptedAt],
      100,
      3,
      null,
      300,
      'spam',
      3,
      9,
    ]);
  });

  it('binds each change column on its own, as a row has it', () => {
    const cases: [Partial<MessageRecord>, string][] = [
      [{ revision: 2 }, 'NULL, ?, NULL, NULL, NULL'],
      [{ editedAt: 5 }, 'NULL, NULL, ?, NULL, NULL'],
      [{ redactedAt: 0 }, 'NULL, NULL, NULL, ?, NULL'],
      [{ redactionReason: '' }, 'NULL, NULL, NULL, NULL, ?'],
    ];
    for (const [change, columns] of cases) {
      const record = acceptedRecord('s', 'x', change);

      const statement = insertMessages('sqlite', [record], 1, [1]);

      expect(rowsOf(statement.sql)[0].split(', ').slice(11, 16).join(', ')).toBe(columns);
      expect(statement.values[6]).toBe(Object.values(change)[0]);
    }
  });

  it('gives PostgreSQL each bound column as one array of its rows, typed, unnested in order', () => {
    const statement = insertMessages('postgres', [plain, tool], 7, [3, 4]);

    expect(statement.sql).toBe(
      'INSERT INTO "messages" ("id", "session_id", "order_key", "role", "content", "client_message_id", "tool_name", "tool_call_id", "tool_calls", "metadata", "accepted_at", "created_at", "revision", "edited_at", "redacted_at", "redaction_reason", "commit_seq", "stored_at")' +
        ' SELECT "id", "session_id", "order_key", "role", "content", "client_message_id", "tool_name", NULL, "tool_calls", NULL, "accepted_at", NULL, NULL, NULL, NULL, NULL, "commit_seq", 7' +
        ' FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::text[], $6::varchar[], $7::varchar[], $8::text[], $9::bigint[], $10::bigint[])' +
        ' AS "row"("id", "session_id", "order_key", "role", "content", "client_message_id", "tool_name", "tool_calls", "accepted_at", "commit_seq") ON CONFLICT DO NOTHING',
    );
    expect(statement.values).toEqual([
      [plain.id, tool.id],
      ['s', 's'],
      [plain.orderKey, tool.orderKey],
      [plain.role, tool.role],
      ['plain', 'tool'],
      [null, 'c-1'],
      [null, 'search'],
      [null, '[{"id":1}]'],
      [plain.acceptedAt, tool.acceptedAt],
      [3, 4],
    ]);
  });

  it('types every PostgreSQL column as its column is, and takes a commit number a row', () => {
    const record = acceptedRecord('s', 'x', {
      clientMessageId: 'c',
      toolName: 'n',
      toolCallId: 'i',
      toolCalls: [],
      metadata: {},
      createdAt: 1,
      revision: 2,
      editedAt: 3,
      redactedAt: 4,
      redactionReason: 'why',
    });

    const statement = insertMessages('postgres', [record], 1, [5, 6]);

    expect(statement.sql).toContain(
      'unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::text[], $6::varchar[], $7::varchar[], $8::varchar[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::integer[], $14::bigint[], $15::bigint[], $16::text[], $17::bigint[])',
    );
    expect(statement.values.slice(5)).toEqual([
      ['c'],
      ['n'],
      ['i'],
      ['[]'],
      ['{}'],
      [record.acceptedAt],
      [1],
      [2],
      [3],
      [4],
      ['why'],
      [5],
    ]);
  });

  it('refuses a stamp that is not a safe integer rather than write or bind it', () => {
    expect(() => insertMessages('sqlite', [plain], 1.5, [1])).toThrow(RangeError);
    expect(() => insertMessages('postgres', [plain], 1.5, [1])).toThrow(RangeError);
    expect(() => insertMessages('postgres', [plain], 2 ** 53, [1])).toThrow(RangeError);
    expect(() => insertMessages('sqlite', [plain], 1, [0.5])).toThrow(RangeError);
  });
});

describe('the statements around a message insert', () => {
  const sessions = [
    { sessionId: 'a', createdAt: 10 },
    { sessionId: 'b', createdAt: 20 },
  ];

  it('begins a write with a savepoint to fall back to, in one round trip', () => {
    expect(beginWrite('sqlite')).toBe('BEGIN IMMEDIATE; SAVEPOINT "optimistic"');
    expect(beginWrite('postgres')).toBe('BEGIN; SAVEPOINT "optimistic"');
    expect(ROLLBACK_TO_BEGIN).toEqual({ sql: 'ROLLBACK TO SAVEPOINT "optimistic"', values: [] });
  });

  it('names every column of a message row, the stamp last', () => {
    expect(insertMessages('sqlite', [acceptedRecord('s', 'x')], 1, [1]).sql).toMatch(
      /^INSERT INTO "messages" \("id", "session_id", "order_key", "role", "content", "client_message_id", "tool_name", "tool_call_id", "tool_calls", "metadata", "accepted_at", "created_at", "revision", "edited_at", "redacted_at", "redaction_reason", "commit_seq", "stored_at"\) VALUES \(.*\) ON CONFLICT DO NOTHING$/,
    );
  });

  it.each([
    ['sqlite', '(?, ?, ?, 0, 0), (?, ?, ?, 0, 0)'],
    ['postgres', '($1, $2, $3, 0, 0), ($4, $5, $6, 0, 0)'],
  ] as const)('creates missing sessions on %s, leaving existing ones alone', (dialect, rows) => {
    expect(insertMissingSessions(dialect, sessions, 99)).toEqual({
      sql: `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") VALUES ${rows} ON CONFLICT ("id") DO NOTHING`,
      values: ['a', 10, 99, 'b', 20, 99],
    });
  });

  it.each([
    ['sqlite', '(?, ?, ?, ?, ?), (?, ?, ?, ?, ?)'],
    ['postgres', '($1, $2, $3, $4, $5), ($6, $7, $8, $9, $10)'],
  ] as const)('adds counts and revisions on %s, answering the new revisions', (dialect, rows) => {
    const counts = sessions.map((session, index) => ({
      ...session,
      inserted: index + 2,
      numbered: index + 5,
    }));

    expect(countMessages(dialect, counts, 99)).toEqual({
      sql:
        `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") VALUES ${rows}` +
        ` ON CONFLICT ("id") DO UPDATE SET "message_count" = "sessions"."message_count" + excluded."message_count",` +
        ` "revision" = "sessions"."revision" + excluded."revision", "updated_at" = excluded."updated_at" RETURNING "id", "revision"`,
      values: ['a', 10, 99, 2, 5, 'b', 20, 99, 3, 6],
    });
  });

  it.each([
    ['sqlite', '?', '?, ?'],
    ['postgres', '$1', '$2, $3'],
  ] as const)('asks on %s which of the ids this transaction wrote', (dialect, stamp, ids) => {
    const records = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];

    expect(findInserted(dialect, records, 7)).toEqual({
      sql: `SELECT "id", "order_key" FROM "messages" WHERE "stored_at" = ${stamp} AND "id" IN (${ids})`,
      values: [7, records[0].id, records[1].id],
    });
  });
});
