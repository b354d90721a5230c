import { type MessageRecord } from '../message/message-record.js';
import { type SessionWrite, type WrittenSession } from './message-store.js';
import {
  ROLLBACK_TO_BEGIN,
  countMessages,
  findInserted,
  insertChunks,
  insertMessages,
  insertMissingSessions,
  type Dialect,
  type SessionRows,
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
 * The body of a write transaction begun with `beginWrite`, whatever the driver. Almost
 * always every record is new, so the write first assumes it: one statement creates the
 * sessions and moves their counters and revisions, then the messages are inserted. Each
 * statement is a round trip that waits for the event loop, which is busy with requests while a
 * write runs, so the fewer the better. Only when an insert skips a row stored already (a
 * replay, a retry another instance stored first) is the work rolled back to the savepoint and
 * done with the count taken after the inserts. Per-row ORM statements would cost more than the
 * commit.
 */
export async function writeSessions(
  run: StatementRunner,
  dialect: Dialect,
  writes: SessionWrite[],
  storedAt: number,
): Promise<WrittenSession[]> {
  const records = writes.flatMap((write) => write.records);
  const sessions = sessionsOf(writes);
  const revisions = await countInserted(run, dialect, sessions, storedAt);
  for (const chunk of insertChunks(dialect, records)) {
    if ((await run.changes(insertMessages(dialect, chunk, storedAt))) !== chunk.length) {
      await run.changes(ROLLBACK_TO_BEGIN);
      return writeCounted(run, dialect, writes, records, sessions, storedAt);
    }
  }
  return writes.map((write) => ({
    inserted: write.records,
    skipped: [],
    revision: write.records.length > 0 ? (revisions.get(write.sessionId) ?? null) : null,
  }));
}

/** The write when some records may be stored already: counters move by what was inserted. */
async function writeCounted(
  run: StatementRunner,
  dialect: Dialect,
  writes: SessionWrite[],
  records: MessageRecord[],
  sessions: SessionRows[],
  storedAt: number,
): Promise<WrittenSession[]> {
  await run.changes(insertMissingSessions(dialect, sessions, storedAt));
  const insertedIds = new Set<string>();
  for (const chunk of insertChunks(dialect, records)) {
    for (const id of await insertChunk(run, dialect, chunk, storedAt)) insertedIds.add(id);
  }
  const results = writes.map((write) => splitInserted(write.records, insertedIds));
  const counts = new Map<string, number>();
  writes.forEach((write, index) => {
    const inserted = results[index].inserted.length;
    if (inserted > 0) counts.set(write.sessionId, (counts.get(write.sessionId) ?? 0) + inserted);
  });
  const revisions = await countInserted(
    run,
    dialect,
    sessions
      .filter((session) => counts.has(session.sessionId))
      .map((session) => ({ ...session, inserted: counts.get(session.sessionId) ?? 0 })),
    storedAt,
  );
  return writes.map((write, index) => ({
    ...results[index],
    revision: results[index].inserted.length > 0 ? (revisions.get(write.sessionId) ?? null) : null,
  }));
}

/** Adds the inserted counts to the sessions (creating new ones); their revisions by id. */
async function countInserted(
  run: StatementRunner,
  dialect: Dialect,
  sessions: (SessionRows & { inserted: number })[],
  storedAt: number,
): Promise<Map<string, number>> {
  const revisions = new Map<string, number>();
  if (sessions.length === 0) return revisions;
  for (const row of await run.rows(countMessages(dialect, sessions, storedAt))) {
    revisions.set(String(row.id), Number(row.revision));
  }
  return revisions;
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

/**
 * One row per session with records (PostgreSQL refuses to upsert a row twice in one statement),
 * in id order, with its records' count and the oldest's acceptance time.
 */
function sessionsOf(writes: SessionWrite[]): (SessionRows & { inserted: number })[] {
  const sessions = new Map<string, SessionRows & { inserted: number }>();
  for (const write of writes) {
    for (const record of write.records) {
      const known = sessions.get(write.sessionId);
      if (!known) {
        sessions.set(write.sessionId, {
          sessionId: write.sessionId,
          createdAt: record.acceptedAt,
          inserted: 1,
        });
      } else {
        known.createdAt = Math.min(known.createdAt, record.acceptedAt);
        known.inserted += 1;
      }
    }
  }
  // Row locks taken in one global order, so two instances' transactions cannot deadlock.
  return [...sessions.values()].sort((left, right) =>
    left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0,
  );
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
