import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { insertMessages } from './message-sql.js';

/** The VALUES rows of an insert, as written. */
function rowsOf(sql: string): string[] {
  const values = sql.slice(sql.indexOf(' VALUES ') + 8, sql.lastIndexOf(' ON CONFLICT'));
  return values.slice(1, -1).split('), (');
}

describe(insertMessages.name, () => {
  const plain = acceptedRecord('s', 'plain');
  const tool = acceptedRecord('s', 'tool', {
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCalls: [{ id: 1 }],
  });

  // The bound values of `plain`: the columns a message without tool fields has.
  const plainValues = [plain.id, 's', plain.orderKey, plain.role, 'plain', plain.acceptedAt];

  it('binds only the columns some row has a value in, writing NULL and the stamp as literals', () => {
    const statement = insertMessages('sqlite', [plain, plain], 1234);

    expect(rowsOf(statement.sql)).toEqual([
      '?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, 1234',
      '?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, ?, 1234',
    ]);
    expect(statement.values).toEqual([...plainValues, ...plainValues]);
  });

  it('binds a column for every row once any row has it, and JSON as text', () => {
    const statement = insertMessages('sqlite', [plain, tool], 1);

    expect(rowsOf(statement.sql)[0]).toBe('?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, 1');
    expect(statement.values.slice(0, 9)).toEqual([
      ...plainValues.slice(0, 5),
      null,
      null,
      null,
      plain.acceptedAt,
    ]);
    expect(statement.values.slice(9)).toEqual([
      tool.id,
      's',
      tool.orderKey,
      tool.role,
      'tool',
      'c-1',
      'search',
      '[{"id":1}]',
      tool.acceptedAt,
    ]);
  });

  it('numbers PostgreSQL placeholders on through the rows, one per bound value', () => {
    const statement = insertMessages('postgres', [plain, tool], 7);

    expect(rowsOf(statement.sql)).toEqual([
      '$1, $2, $3, $4, $5, $6, $7, NULL, $8, NULL, $9, 7',
      '$10, $11, $12, $13, $14, $15, $16, NULL, $17, NULL, $18, 7',
    ]);
    expect(statement.values).toHaveLength(18);
  });

  it('refuses a stamp that is not a safe integer rather than write it into SQL', () => {
    expect(() => insertMessages('sqlite', [plain], 1.5)).toThrow(RangeError);
  });
});
