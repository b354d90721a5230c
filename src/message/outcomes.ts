import { type AppendStatus } from './append-status.js';
import { type MessageRecord } from './message-record.js';

// The write path's one vocabulary for what a write came to. A failure is an outcome, never a
// rejection: a caller must decide what becomes of the messages (journal them, keep them, set
// them aside), and a type it has to look at makes it decide.

/**
 * The database (or the disk) failed: nothing was written (or, if a connection broke during
 * COMMIT, perhaps all of it). Kept, and tried again later; `error` is the cause, for logs and
 * health.
 */
export interface Unavailable {
  kind: 'unavailable';
  error: unknown;
}

/**
 * The database refused the write as a whole for a reason of its own (a constraint, a bad
 * value): nothing was written, and the same write would be refused again.
 */
export interface Refused {
  kind: 'refused';
  reason: string;
}

/** Why a write was not made. */
export type WriteFailure = Unavailable | Refused;

/** A record the database refused on its own (the others of its write were stored), with why. */
export interface RefusedRecord {
  record: MessageRecord;
  reason: string;
}

/** What the database made of a write it took. */
export interface Written {
  kind: 'written';
  /** Inserted now, in order. */
  inserted: MessageRecord[];
  /** Stored already (a replay, or a retry another instance stored first). */
  skipped: MessageRecord[];
  /** Refused one by one (only when refusals are isolated); the others were stored. */
  refused: RefusedRecord[];
  /** The session's revision after the last transaction that inserted; null if none did. */
  revision: number | null;
}

/** What one submitted write came to. */
export type WriteAttempt = Written | WriteFailure;

/**
 * What became of the fresh messages of one append: accepted, with the status their answer
 * promises (PERSISTED once stored, QUEUED once journaled, BUFFERED when held in memory only),
 * or refused by the database, with nothing stored. `skipped`: those another acceptance of the
 * same client id stored first (PERSISTED), to be answered with what is stored.
 */
export type WriteOutcome =
  { kind: 'accepted'; status: AppendStatus; skipped: MessageRecord[] } | Refused;

/**
 * How a step over what a session holds ended: `done`, nothing left; `stopped` at a failure
 * (or because it could not tell), keeping what is left for the next try.
 */
export type Progress = 'done' | 'stopped';

/**
 * Pairs each of `entries` the database refused with its reason (`refused`), and keeps the
 * others (`kept`), both in order.
 */
export function splitRefused<T extends { record: MessageRecord }>(
  entries: readonly T[],
  refused: readonly RefusedRecord[],
): { refused: (T & { reason: string })[]; kept: T[] } {
  const reasons = new Map(refused.map(({ record, reason }) => [record.id, reason]));
  const split: { refused: (T & { reason: string })[]; kept: T[] } = { refused: [], kept: [] };
  for (const entry of entries) {
    const reason = reasons.get(entry.record.id);
    if (reason === undefined) split.kept.push(entry);
    else split.refused.push({ ...entry, reason });
  }
  return split;
}
