import { describeError, errorCode } from '../common/errors/describe-error.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';

/**
 * Why a write failed, told apart by the error: `refused` when the database turned down these
 * rows for a reason of its own (a constraint, an encoding, a value) and trying again cannot
 * help; `unavailable` when the database itself failed (unreachable, locked, disk full, I/O
 * error, its file replaced) and a later try may succeed.
 */
export type DatabaseFailureKind = 'refused' | 'unavailable';

/**
 * What a failed write tells of the database: its kind, and whether the database's disk is full
 * (SQLite, whose file usually shares DATA_DIR, and so the disk, with the journal). A full disk
 * is an outage that a heartbeat does not see end: it commits in the page or two that a failed
 * write leaves free, while no message fits.
 */
export interface DatabaseFailure {
  kind: DatabaseFailureKind;
  diskFull: boolean;
}

// SQLite result codes that are about the rows written, not the database.
const SQLITE_REFUSALS = new Set(['SQLITE_CONSTRAINT', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG']);

/** Tells a failed write's error apart: the one place that reads the drivers' codes. */
export function classifyDatabaseError(error: unknown): DatabaseFailure {
  const code = errorCode(driverErrorOf(error));
  return { kind: kindOf(code), diskFull: code === 'SQLITE_FULL' };
}

function kindOf(code: string | undefined): DatabaseFailureKind {
  if (code === undefined) return 'unavailable';
  if (code.startsWith('SQLITE_')) return SQLITE_REFUSALS.has(code) ? 'refused' : 'unavailable';
  // PostgreSQL SQLSTATE classes 22 (data exception: a bad value or encoding), 23 (integrity
  // constraint violation) and 54 (program limit exceeded: a value past one of PostgreSQL's own
  // limits, such as a tsvector over 1 MiB, is refused each time it is written). Connection
  // failures (08), lack of resources (53), operator intervention (57), deadlocks and
  // serialization failures (40) and the rest are outages.
  return /^(22|23|54)[0-9A-Z]{3}$/.test(code) ? 'refused' : 'unavailable';
}

/** How often a transaction PostgreSQL chose as a deadlock's victim is tried again. */
const DEADLOCK_RETRIES = 3;

// deadlock_detected, serialization_failure: PostgreSQL rolled the transaction back, nothing
// was changed, and trying it again is safe.
const RETRIED_CODES = new Set(['40P01', '40001']);

/**
 * Whether a transaction failed only because PostgreSQL chose it as a deadlock's victim (or it
 * failed serialization): it changed nothing, and is tried again rather than counted a failure.
 */
export function isRetriedTransactionFailure(error: unknown): boolean {
  return RETRIED_CODES.has(errorCode(driverErrorOf(error)) ?? '');
}

/**
 * `transaction()` (one whole transaction, begun and ended by it), and again, up to
 * DEADLOCK_RETRIES more times, while it fails only because PostgreSQL chose it as a deadlock's
 * victim: it changed nothing. Any other failure, or the last, is thrown.
 */
export async function retryingDeadlocks<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt > DEADLOCK_RETRIES || !isRetriedTransactionFailure(error)) throw error;
    }
  }
}

/** Whether a driver error is a broken constraint (a duplicate key) rather than an outage. */
export function isConstraintViolation(error: unknown): boolean {
  const code = errorCode(driverErrorOf(error));
  return code === 'SQLITE_CONSTRAINT' || (code !== undefined && /^23[0-9A-Z]{3}$/.test(code));
}

// TypeORM wraps driver errors in a QueryFailedError that keeps the original as driverError.
function driverErrorOf(error: unknown): unknown {
  return (error as { driverError?: unknown } | null)?.driverError ?? error;
}

/**
 * The database file at the configured path is no longer the one this process has open (it was
 * deleted or replaced). Commits would go to a file nobody will read again, so writes fail with
 * this until a restart opens the file that is there now.
 */
export class DatabaseFileChangedError extends Error {
  override readonly name = 'DatabaseFileChangedError';
  readonly code = 'SCRIBE_DATABASE_FILE_CHANGED';

  constructor(path: string, what: 'deleted' | 'replaced') {
    super(
      `the database file ${path} was ${what} while open; writes are held in the journal until Scribe is restarted`,
    );
  }
}

/**
 * A read of the database failed because the database did (unreachable, locked, its file
 * unreadable): an outage like DatabaseNotReadyError, not a fault of the server's. The client
 * is not told why (a host, a path): `reason` is for the logs.
 */
export class DatabaseReadError extends ScribeException {
  constructor(readonly reason: string) {
    super(
      ScribeErrorCode.DatabaseUnavailable,
      'The database cannot be read now; appends are journaled meanwhile. Retry the read later.',
    );
  }
}

// Errors of the code itself, not of the database: a read that meets one is a fault, and an
// outage must not hide it.
const PROGRAMMING_ERRORS = [TypeError, RangeError, ReferenceError, SyntaxError];

/**
 * What a failed read of the database answers: an outage (see classifyDatabaseError) becomes
 * DatabaseReadError; a Scribe error (DatabaseNotReadyError among them), a refusal and an error
 * of the code itself are left as they are.
 */
export function readFailure(error: unknown): unknown {
  return isOutage(error) ? new DatabaseReadError(describeError(driverErrorOf(error))) : error;
}

/**
 * A change the API asked of the database directly (not through the journal) failed because
 * the database did: DATABASE_UNAVAILABLE with `message`, which says what was not done.
 */
export class DatabaseWriteError extends ScribeException {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(ScribeErrorCode.DatabaseUnavailable, message);
  }
}

/** What a failed change answers: an outage becomes DatabaseWriteError, the rest as readFailure. */
export function writeFailure(error: unknown, message: string): unknown {
  return isOutage(error)
    ? new DatabaseWriteError(describeError(driverErrorOf(error)), message)
    : error;
}

function isOutage(error: unknown): boolean {
  if (error instanceof ScribeException) return false;
  if (PROGRAMMING_ERRORS.some((type) => error instanceof type)) return false;
  return classifyDatabaseError(error).kind !== 'refused';
}

/**
 * `read`, whose failure, if the database caused it, answers DATABASE_UNAVAILABLE (see
 * readFailure): every read of the database the API makes, a resolver's or a subscription's
 * replay, passes through here, so that none has to tell an outage from a fault itself.
 */
export async function fromDatabase<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    throw readFailure(error);
  }
}
