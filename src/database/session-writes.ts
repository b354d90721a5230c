import { type MessageRecord } from '../message/message-record.js';
import { type SessionWrite, type WrittenSession } from './message-store.js';
import {
  ROLLBACK_TO_BEGIN,
  countMessages,
  findInserted,
  inInsertOrder,
  insertChunks,
  insertMessages,
  insertMissingSessions,
  lockSessions,
  type SessionRows,
} from './message-sql.js';
import { type Dialect } from './sql-dialect.js';
import { placeAfterStored, storedKeysOf, withStoredKeys } from './stored-order.js';
import { type StatementRunner } from './statement-runner.js';

/**
 * The body of a write transaction begun with `beginWrite`, whatever the driver. Almost
 * always every record is new, so the write first assumes it: one statement creates the
 * sessions and moves their counters and revisions, then the messages are inserted. Each
 * statement is a round trip that waits for the event loop, which is busy with requests while a
 * write runs, so the fewer the better. Only when an insert skips a row stored already (a
 * replay, a retry another instance stored first) is the work rolled back to the savepoint and
 * done with the count taken after the inserts. Per-row ORM statements would cost more than the
 * commit. Answered appends get keys after the stored ones once the rows are locked (one more
 * statement, only in a write that holds one: see placeAfterStored); `instanceId` ends those.
 */
export async function writeSessions(
  run: StatementRunner,
  dialect: Dialect,
  writes: SessionWrite[],
  storedAt: number,
  instanceId: string,
): Promise<WrittenSession[]> {
  const records = writes.flatMap((write) => write.records);
  const sessions = sessionsOf(writes);
  const revisions = await countInserted(
    run,
    dialect,
    sessions.map((session) => ({ ...session, numbered: session.inserted })),
    storedAt,
  );
  // The upsert above holds the session rows now (see placeAfterStored).
  const keys = await placeAfterStored(run, dialect, writes, instanceId);
  const seqs = commitNumbers(records, sessions, revisions);
  const rows = inInsertOrder(dialect, withStoredKeys(records, keys), seqs);
  let offset = 0;
  for (const chunk of insertChunks(dialect, rows.records)) {
    const statement = insertMessages(
      dialect,
      chunk,
      storedAt,
      rows.seqs.slice(offset, offset + chunk.length),
    );
    offset += chunk.length;
    if ((await run.changes(statement)) !== chunk.length) {
      // The rollback lets go of the row locks too: the counted write takes them again, and
      // reads the stored keys again after.
      await run.changes(ROLLBACK_TO_BEGIN);
      return writeCounted(run, dialect, writes, records, sessions, storedAt, instanceId);
    }
  }
  offset = 0;
  return writes.map((write) => {
    const own = seqs.slice(offset, (offset += write.records.length));
    const orderKeys = storedKeysOf(write, write.records, keys);
    return {
      inserted: write.records,
      skipped: [],
      seqs: own,
      revision: write.records.length > 0 ? (revisions.get(write.sessionId) ?? null) : null,
      ...(orderKeys ? { orderKeys } : {}),
    };
  });
}

/**
 * The commit number of each record, in order: a session's records take the numbers up to the
 * revision its counter moved to, oldest first.
 */
function commitNumbers(
  records: MessageRecord[],
  sessions: (SessionRows & { inserted: number })[],
  revisions: Map<string, number>,
): number[] {
  const next = new Map<string, number>();
  for (const session of sessions) {
    next.set(session.sessionId, (revisions.get(session.sessionId) ?? 0) - session.inserted + 1);
  }
  return records.map((record) => {
    const seq = next.get(record.sessionId) as number;
    next.set(record.sessionId, seq + 1);
    return seq;
  });
}

/** The write when some records may be stored already: counters move by what was inserted. */
async function writeCounted(
  run: StatementRunner,
  dialect: Dialect,
  writes: SessionWrite[],
  records: MessageRecord[],
  sessions: (SessionRows & { inserted: number })[],
  storedAt: number,
  instanceId: string,
): Promise<WrittenSession[]> {
  await run.changes(insertMissingSessions(dialect, sessions, storedAt));
  // Numbers after the revisions, under the row locks, one for every record tried: a skipped
  // one leaves a gap, which nothing minds. The counters then move by what was inserted, the
  // revision to the last number an inserted record took.
  const locked = new Map<string, number>();
  for (const row of await run.rows(
    lockSessions(
      dialect,
      sessions.map((s) => s.sessionId),
    ),
  )) {
    locked.set(String(row.id), Number(row.revision));
  }
  const keys = await placeAfterStored(run, dialect, writes, instanceId);
  const seqs = commitNumbers(
    records,
    sessions.map((session) => ({ ...session, inserted: 0 })),
    locked,
  );
  const seqOf = new Map(records.map((record, index) => [record, seqs[index]]));
  const insertedIds = new Set<string>();
  let offset = 0;
  const rows = inInsertOrder(dialect, withStoredKeys(records, keys), seqs);
  for (const chunk of insertChunks(dialect, rows.records)) {
    const chunkSeqs = rows.seqs.slice(offset, (offset += chunk.length));
    for (const id of await insertChunk(run, dialect, chunk, storedAt, chunkSeqs)) {
      insertedIds.add(id);
    }
  }
  const results = writes.map((write) => splitInserted(write.records, insertedIds));
  const counts = new Map<string, { inserted: number; last: number }>();
  for (const result of results) {
    for (const record of result.inserted) {
      const count = counts.get(record.sessionId) ?? { inserted: 0, last: 0 };
      counts.set(record.sessionId, {
        inserted: count.inserted + 1,
        last: Math.max(count.last, seqOf.get(record) as number),
      });
    }
  }
  const revisions = await countInserted(
    run,
    dialect,
    sessions.flatMap((session) => {
      const count = counts.get(session.sessionId);
      if (!count) return [];
      const before = locked.get(session.sessionId) ?? 0;
      return [{ ...session, inserted: count.inserted, numbered: count.last - before }];
    }),
    storedAt,
  );
  return writes.map((write, index) => {
    const orderKeys = storedKeysOf(write, results[index].inserted, keys);
    return {
      ...results[index],
      seqs: results[index].inserted.map((record) => seqOf.get(record) as number),
      revision:
        results[index].inserted.length > 0 ? (revisions.get(write.sessionId) ?? null) : null,
      ...(orderKeys ? { orderKeys } : {}),
    };
  });
}

/** Adds the counts to the sessions (creating new ones); their revisions by id. */
async function countInserted(
  run: StatementRunner,
  dialect: Dialect,
  sessions: (SessionRows & { inserted: number; numbered: number })[],
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
 * already, the rows this transaction wrote are told apart by their order key (the one it
 * inserts, which placeAfterStored may have given) and `storedAt`, which the store makes unique
 * to each of its transactions.
 */
async function insertChunk(
  run: StatementRunner,
  dialect: Dialect,
  chunk: MessageRecord[],
  storedAt: number,
  seqs: readonly number[],
): Promise<string[]> {
  const changed = await run.changes(insertMessages(dialect, chunk, storedAt, seqs));
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
