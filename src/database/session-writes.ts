import { type MessageRecord } from '../message/message-record.js';
import { type SessionWrite, type WrittenSession } from './message-store.js';
import {
  INSERT_CHUNK_ROWS,
  countMessages,
  findInserted,
  insertMessages,
  insertMissingSessions,
  type Dialect,
  type Statement,
} from './message-sql.js';

/** Runs statements inside the caller's transaction. */
export interface StatementRunner {
  /** The rows the statement returns. */
  rows(statement: Statement): Promise<Record<string, unknown>[]>;
  /** How many rows the statement inserted or changed. */
  changes(statement: Statement): Promise<number>;
}

/**
 * The body of a write transaction, whatever the driver: three kinds of statement however many
 * sessions share it (missing sessions created, messages inserted or skipped, counters and
 * revisions moved by what was inserted). Per-row ORM statements would cost more than the commit.
 */
export async function writeSessions(
  run: StatementRunner,
  dialect: Dialect,
  writes: SessionWrite[],
  storedAt: number,
): Promise<WrittenSession[]> {
  const records = writes.flatMap((write) => write.records);
  if (records.length === 0)
    return writes.map(() => ({ inserted: [], skipped: [], revision: null }));
  const sessions = sessionsOf(writes);
  await run.changes(insertMissingSessions(dialect, sessions, storedAt));
  const insertedIds = new Set<string>();
  for (let start = 0; start < records.length; start += INSERT_CHUNK_ROWS) {
    const chunk = records.slice(start, start + INSERT_CHUNK_ROWS);
    for (const id of await insertChunk(run, dialect, chunk, storedAt)) insertedIds.add(id);
  }
  const results = writes.map((write) => splitInserted(write.records, insertedIds));
  const counts = new Map<string, number>();
  writes.forEach((write, index) => {
    const inserted = results[index].inserted.length;
    if (inserted > 0) counts.set(write.sessionId, (counts.get(write.sessionId) ?? 0) + inserted);
  });
  const revisions = new Map<string, number>();
  if (counts.size > 0) {
    const rows = sessions
      .filter((session) => counts.has(session.sessionId))
      .map((session) => ({ ...session, inserted: counts.get(session.sessionId) ?? 0 }));
    for (const row of await run.rows(countMessages(dialect, rows, storedAt))) {
      revisions.set(String(row.id), Number(row.revision));
    }
  }
  return writes.map((write, index) => ({
    ...results[index],
    revision: results[index].inserted.length > 0 ? (revisions.get(write.sessionId) ?? null) : null,
  }));
}

/**
 * Inserts a chunk and returns the ids it inserted. Almost always all of them (the change count
 * says so, and RETURNING every id would cost a tenth of the insert); when some were stored
 * already, the rows this transaction wrote are told apart by their order key and `storedAt`,
 * which the store makes unique to each of its transactions.
 */
async function insertChunk(
  run: StatementRunner,
  dialect: Dialect,
  chunk: MessageRecord[],
  storedAt: number,
): Promise<string[]> {
  const changed = await run.changes(insertMessages(dialect, chunk, storedAt));
  if (changed === chunk.length) return chunk.map((record) => record.id);
  const written = new Map(
    (await run.rows(findInserted(dialect, chunk, storedAt))).map((row) => [
      String(row.id),
      String(row.order_key),
    ]),
  );
  return chunk.flatMap((record) => (written.get(record.id) === record.orderKey ? [record.id] : []));
}

/** One row per session (PostgreSQL refuses to upsert a row twice in one statement), in id order. */
function sessionsOf(writes: SessionWrite[]): { sessionId: string; createdAt: number }[] {
  const createdAt = new Map<string, number>();
  for (const write of writes) {
    for (const record of write.records) {
      const known = createdAt.get(write.sessionId);
      if (known === undefined || record.acceptedAt < known) {
        createdAt.set(write.sessionId, record.acceptedAt);
      }
    }
  }
  // Row locks taken in one global order, so two instances' transactions cannot deadlock.
  return [...createdAt]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([sessionId, first]) => ({ sessionId, createdAt: first }));
}

function splitInserted(
  records: MessageRecord[],
  insertedIds: Set<string>,
): { inserted: MessageRecord[]; skipped: MessageRecord[] } {
  const inserted: MessageRecord[] = [];
  const skipped: MessageRecord[] = [];
  for (const record of records) {
    // A record listed twice was inserted once: the second copy counts as skipped.
    if (insertedIds.delete(record.id)) inserted.push(record);
    else skipped.push(record);
  }
  return { inserted, skipped };
}

/**
 * `stored_at` for each transaction of one store: the clock, but never the same value twice, so
 * that the rows a transaction wrote can be told from ones stored before (see insertChunk).
 */
export class StoredAtStamps {
  private last = 0;

  constructor(private readonly now: () => number = Date.now) {}

  next(): number {
    this.last = Math.max(this.now(), this.last + 1);
    return this.last;
  }
}
