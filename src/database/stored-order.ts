import { type MessageRecord } from '../message/message-record.js';
import { keysAfter } from '../message/order-key.js';
import { type SessionWrite } from './message-store.js';
import { storedMaxKeys } from './message-sql.js';
import { type Dialect } from './sql-dialect.js';
import { type StatementRunner } from './statement-runner.js';

/**
 * The keys a write's answered appends (SessionWrite.after) are stored with, by record, when
 * theirs are not after every key their session holds: an instance whose clock is behind
 * another's that stored messages of the session would otherwise put them before those, and a
 * client that waited for each answer would read its messages out of order. Such a write's
 * records all move, in order, to the keys after the stored max; the others are left out.
 *
 * Run once the session rows are locked, as a statement of its own: under PostgreSQL's READ
 * COMMITTED each statement reads what was committed when it began, so the max read in the
 * statement that waited for the lock (a subquery of it) would miss the rows of the transaction
 * it waited for; a later statement sees them. The lock then holds the max still until commit.
 *
 * The keys cannot collide with stored ones, nor with any this instance's clock issues later,
 * though the clock does not move past them (a key from a clock days ahead would carry it on):
 * they end in this instance's id and a marker no clock issues (keysAfter), so no other
 * instance's key is the same, nor a key of this clock; and they are after everything the
 * session holds, derived keys of this instance's earlier writes included, since the max is
 * read under the session's lock. A later key that sorts before what is stored is an append's,
 * and moves in turn.
 */
export async function placeAfterStored(
  run: StatementRunner,
  dialect: Dialect,
  writes: readonly SessionWrite[],
  instanceId: string,
): Promise<Map<MessageRecord, string>> {
  const keys = new Map<MessageRecord, string>();
  const marked = writes.filter((write) => write.after === 'stored' && write.records.length > 0);
  if (marked.length === 0) return keys;
  const sessionIds = [...new Set(marked.map((write) => write.sessionId))].sort();
  const maxima = new Map<string, string>();
  for (const row of await run.rows(storedMaxKeys(dialect, sessionIds))) {
    if (typeof row.max_key === 'string') maxima.set(String(row.session_id), row.max_key);
  }
  for (const write of marked) {
    const max = maxima.get(write.sessionId);
    if (max === undefined) continue;
    const lowest = write.records.reduce(
      (low, record) => (record.orderKey < low ? record.orderKey : low),
      write.records[0].orderKey,
    );
    if (lowest > max) continue;
    const after = keysAfter(max, write.records.length, instanceId);
    after?.forEach((key, index) => keys.set(write.records[index], key));
  }
  return keys;
}

/** The records as they are inserted: the re-keyed ones as copies, the originals left as accepted. */
export function withStoredKeys(
  records: MessageRecord[],
  keys: ReadonlyMap<MessageRecord, string>,
): MessageRecord[] {
  if (keys.size === 0) return records;
  return records.map((record) => {
    const key = keys.get(record);
    return key === undefined ? record : { ...record, orderKey: key };
  });
}

/** The keys a write's inserted records were stored with, when the write moved any; else undefined. */
export function storedKeysOf(
  write: SessionWrite,
  inserted: readonly MessageRecord[],
  keys: ReadonlyMap<MessageRecord, string>,
): string[] | undefined {
  if (!write.records.some((record) => keys.has(record))) return undefined;
  return inserted.map((record) => keys.get(record) ?? record.orderKey);
}
