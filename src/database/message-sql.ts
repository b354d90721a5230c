import { type MessageRecord } from '../message/message-record.js';
import { rowsOf, type Dialect, type Statement } from './sql-dialect.js';

// The SQL of a message write, the same on SQLite and PostgreSQL but for placeholders.

/** One session's share of a write transaction. */
export interface SessionRows {
  sessionId: string;
  /** Epoch ms of its oldest record: the creation time of a new session. */
  createdAt: number;
}

// On PostgreSQL each statement is a round trip, so fewer, larger statements insert markedly
// faster (npm run bench); its columns come as arrays, one parameter each. SQLite binds at most
// 18 values a row: its 256-row chunks stay under its limit of 32,766.
export const INSERT_CHUNK_ROWS = 2000;
// On SQLite a statement is a call into the library on the writer's thread, and preparing one
// costs about as much as running it: the store keeps them prepared by their text, which
// differs by row count, so SQLite chunks come in the few sizes that are powers of two.
export const SQLITE_CHUNK_ROWS = 256;

/** The records in the chunks they are inserted in, in order, none empty. */
export function insertChunks(dialect: Dialect, records: MessageRecord[]): MessageRecord[][] {
  const chunks: MessageRecord[][] = [];
  for (let start = 0; start < records.length;) {
    const length = chunkLength(dialect, records.length - start);
    chunks.push(records.slice(start, start + length));
    start += length;
  }
  return chunks;
}

/**
 * The records, with their commit numbers, in the order they are inserted: by id on PostgreSQL,
 * unless two of them claim one id, client id or order key of a session; as given otherwise.
 * Why: an insert takes each id's entry of the primary key as it goes, and two transactions
 * inserting the same ids in opposite orders (two imports of the same messages into two sessions,
 * on two connections) deadlocked; in one order, the second waits for the first and then finds
 * them stored. Nothing stored depends on the order (each row carries its own order key and
 * commit number), except which of two rows that claim one key is inserted: the first given, so
 * such a write keeps its order. SQLite has one writer, nothing to deadlock with.
 */
export function inInsertOrder(
  dialect: Dialect,
  records: MessageRecord[],
  seqs: readonly number[],
): { records: MessageRecord[]; seqs: number[] } {
  if (dialect !== 'postgres' || claimTwice(records)) return { records, seqs: [...seqs] };
  const order = records.map((_, index) => index);
  order.sort((left, right) => (records[left].id < records[right].id ? -1 : 1));
  return { records: order.map((index) => records[index]), seqs: order.map((index) => seqs[index]) };
}

/**
 * Whether two records claim one id, or one client id or order key of a session. Per session, so
 * that a write of thousands of rows builds no string per row: it runs on every PostgreSQL write.
 */
function claimTwice(records: readonly MessageRecord[]): boolean {
  const ids = new Set<string>();
  const bySession = new Map<string, { keys: Set<string>; clientIds: Set<string> }>();
  for (const record of records) {
    let session = bySession.get(record.sessionId);
    if (!session)
      bySession.set(record.sessionId, (session = { keys: new Set(), clientIds: new Set() }));
    if (ids.has(record.id) || session.keys.has(record.orderKey)) return true;
    ids.add(record.id);
    session.keys.add(record.orderKey);
    const clientId = record.clientMessageId;
    if (clientId !== null) {
      if (session.clientIds.has(clientId)) return true;
      session.clientIds.add(clientId);
    }
  }
  return false;
}

function chunkLength(dialect: Dialect, left: number): number {
  if (dialect === 'postgres') return Math.min(left, INSERT_CHUNK_ROWS);
  let length = SQLITE_CHUNK_ROWS;
  while (length > left) length /= 2;
  return length;
}

/**
 * Begins a message write: a transaction, and a savepoint at its start to fall back to when the
 * optimistic write finds rows stored already (see writeSessions). One round trip for both.
 */
export function beginWrite(dialect: Dialect): string {
  return `${dialect === 'sqlite' ? 'BEGIN IMMEDIATE' : 'BEGIN'}; SAVEPOINT "optimistic"`;
}

/** Undoes what the write did since {@link beginWrite}, keeping the transaction. */
export const ROLLBACK_TO_BEGIN: Statement = {
  sql: 'ROLLBACK TO SAVEPOINT "optimistic"',
  values: [],
};

/** Creates the sessions that do not exist yet, so that their messages can refer to them. */
export function insertMissingSessions(
  dialect: Dialect,
  sessions: SessionRows[],
  storedAt: number,
): Statement {
  const values: unknown[] = [];
  for (const session of sessions) values.push(session.sessionId, session.createdAt, storedAt);
  return {
    sql:
      `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") VALUES ` +
      rowsOf(dialect, sessions.length, 3, (marks) => `(${marks}, 0, 0)`) +
      ` ON CONFLICT ("id") DO NOTHING`,
    values,
  };
}

/**
 * The sessions' revisions, their rows locked until the transaction ends (SQLite's write lock is
 * the transaction's already): commit numbers are handed out after them.
 */
export function lockSessions(dialect: Dialect, sessionIds: string[]): Statement {
  return {
    sql:
      `SELECT "id", "revision" FROM "sessions" WHERE "id" IN (${rowsOf(dialect, sessionIds.length, 1, (mark) => mark)})` +
      (dialect === 'postgres' ? ' ORDER BY "id" FOR UPDATE' : ''),
    values: [...sessionIds],
  };
}

/**
 * The greatest order key of each of the sessions, null for one without messages: what a
 * write's fresh records must sort after (see placeAfterStored). One MAX per session, on the
 * unique index on session and key, reads one index entry from its end: a MAX over the IN list
 * grouped by session read every entry of the sessions (PostgreSQL and SQLite apply their min/max
 * shortcut to an ungrouped aggregate only), and an append to a session of 10,000 messages spent
 * 9.6 ms of PostgreSQL's CPU on it against 0.06 ms (issue 24's peer bench).
 */
export function storedMaxKeys(dialect: Dialect, sessionIds: string[]): Statement {
  return {
    sql:
      `SELECT "id" AS "session_id", (SELECT MAX("order_key") FROM "messages" WHERE "messages"."session_id" = "sessions"."id") AS "max_key"` +
      ` FROM "sessions" WHERE "id" IN (${rowsOf(dialect, sessionIds.length, 1, (mark) => mark)})`,
    values: [...sessionIds],
  };
}

/**
 * The columns of a message row: how each is read off a record, and its type in PostgreSQL
 * (an array of which carries the column's values in {@link insertMessages}).
 */
const MESSAGE_COLUMNS: readonly [string, (record: MessageRecord) => unknown, string][] = [
  ['id', (record) => record.id, 'varchar'],
  ['session_id', (record) => record.sessionId, 'varchar'],
  ['order_key', (record) => record.orderKey, 'varchar'],
  ['role', (record) => record.role, 'varchar'],
  ['content', (record) => record.content, 'text'],
  ['client_message_id', (record) => record.clientMessageId, 'varchar'],
  ['tool_name', (record) => record.toolName, 'varchar'],
  ['tool_call_id', (record) => record.toolCallId, 'varchar'],
  ['tool_calls', (record) => jsonColumn(record.toolCalls), 'text'],
  ['metadata', (record) => jsonColumn(record.metadata), 'text'],
  ['accepted_at', (record) => record.acceptedAt, 'bigint'],
  ['created_at', (record) => record.createdAt ?? null, 'bigint'],
  // Set only on an imported message that was edited or redacted where it came from.
  ['revision', (record) => record.revision ?? null, 'integer'],
  ['edited_at', (record) => record.editedAt ?? null, 'bigint'],
  ['redacted_at', (record) => record.redactedAt ?? null, 'bigint'],
  ['redaction_reason', (record) => record.redactionReason ?? null, 'text'],
];

const INSERT_INTO = `INSERT INTO "messages" (${MESSAGE_COLUMNS.map(([name]) => `"${name}"`).join(', ')}, "commit_seq", "stored_at")`;

/**
 * Inserts the messages; a row whose id, client id or order key is stored already is skipped
 * (a replay, or a retry stored by another instance). A column that is NULL in every row is
 * written as a literal, not bound: most messages carry no tool fields.
 *
 * On SQLite each row's values are bound, and the stamp too, so that a statement's text
 * depends only on its row count and columns and the store can keep it prepared (binding costs
 * next to nothing on its driver). On PostgreSQL each column comes as one array, its rows
 * unnested in order: PostgreSQL parses and plans a statement of a few parameters, not one of
 * thousands, and the `pg` driver binds a value a column, not one a row and column. 100-row
 * inserts into Scribe's table took about 30% less of PostgreSQL's CPU and of the driver's.
 */
export function insertMessages(
  dialect: Dialect,
  records: MessageRecord[],
  storedAt: number,
  /** Each record's place in its session's commit order (see countMessages). */
  seqs: readonly number[],
): Statement {
  const bound = MESSAGE_COLUMNS.filter(([, read]) =>
    records.some((record) => read(record) !== null),
  );
  const checkedStamp = integerValue(storedAt);
  const checkedSeqs = seqs.slice(0, records.length).map(integerValue);
  // The columns in the table's order: a bound one as `value(i)` for its i-th bound column.
  const columns = (value: (index: number) => string) => {
    let index = 0;
    return MESSAGE_COLUMNS.map((column) => (bound.includes(column) ? value(index++) : 'NULL'));
  };
  if (dialect === 'postgres') {
    const names = [...bound.map(([name]) => `"${name}"`), '"commit_seq"'];
    const arrays = [...bound.map(([, , type]) => type), 'bigint'].map(
      (type, index) => `$${index + 1}::${type}[]`,
    );
    return {
      sql:
        `${INSERT_INTO} SELECT ${columns((index) => names[index]).join(', ')}, "commit_seq", ${checkedStamp}` +
        ` FROM unnest(${arrays.join(', ')}) AS "row"(${names.join(', ')}) ON CONFLICT DO NOTHING`,
      values: [...bound.map(([, read]) => records.map(read)), checkedSeqs],
    };
  }
  const values: unknown[] = [];
  records.forEach((record, row) => {
    for (const [, read] of bound) values.push(read(record));
    values.push(checkedSeqs[row], checkedStamp);
  });
  // Every row reads the same: a large batch builds its text once rather than once a row.
  const row = `(${columns(() => '?').join(', ')}, ?, ?)`;
  return {
    sql: `${INSERT_INTO} VALUES ${new Array<string>(records.length).fill(row).join(', ')} ON CONFLICT DO NOTHING`,
    values,
  };
}

/** A number safe to write into SQL as it is, or to bind as an exact integer. */
function integerValue(value: number): number {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a safe integer: ${value}`);
  return value;
}

/** Rows of these ids written by the transaction stamped `storedAt`, with their order keys. */
export function findInserted(
  dialect: Dialect,
  records: MessageRecord[],
  storedAt: number,
): Statement {
  const marks = rowsOf(dialect, records.length + 1, 1, (mark) => mark).split(', ');
  return {
    sql: `SELECT "id", "order_key" FROM "messages" WHERE "stored_at" = ${marks[0]} AND "id" IN (${marks.slice(1).join(', ')})`,
    values: [storedAt, ...records.map((record) => record.id)],
  };
}

/**
 * Adds each session's inserted messages to its message count and moves its revision on by the
 * commit numbers the write takes (`numbered`, the same but for a write that may skip rows, which
 * takes one for every record it tries), creating the session if it is new; returns the new
 * revisions. The row lock this takes orders the session's writes: the revision a write leaves
 * is the last commit number it gave out, and the next write's come after.
 */
export function countMessages(
  dialect: Dialect,
  counts: { sessionId: string; inserted: number; numbered: number; createdAt: number }[],
  storedAt: number,
): Statement {
  const values: unknown[] = [];
  for (const count of counts) {
    values.push(count.sessionId, count.createdAt, storedAt, count.inserted, count.numbered);
  }
  return {
    sql:
      `INSERT INTO "sessions" ("id", "created_at", "updated_at", "message_count", "revision") VALUES ` +
      rowsOf(dialect, counts.length, 5, (marks) => `(${marks})`) +
      ` ON CONFLICT ("id") DO UPDATE SET ` +
      `"message_count" = "sessions"."message_count" + excluded."message_count", ` +
      `"revision" = "sessions"."revision" + excluded."revision", ` +
      `"updated_at" = excluded."updated_at" RETURNING "id", "revision"`,
    values,
  };
}

/** JSON text or NULL, as the read side's `simple-json` columns expect. */
function jsonColumn(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
