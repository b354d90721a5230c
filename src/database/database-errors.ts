import { errorCode } from '../common/errors/describe-error.js';

/**
 * Why a write failed, told apart by the error: `refused` when the database turned down these
 * rows for a reason of its own (a constraint, an encoding, a value) and trying again cannot
 * help; `unavailable` when the database itself failed (unreachable, locked, disk full, I/O
 * error, its file replaced) and a later try may succeed.
 */
export type DatabaseFailureKind = 'refused' | 'unavailable';

// SQLite result codes that are about the rows written, not the database.
const SQLITE_REFUSALS = new Set(['SQLITE_CONSTRAINT', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG']);

export function classifyDatabaseError(error: unknown): DatabaseFailureKind {
  const code = errorCode(driverErrorOf(error));
  if (code === undefined) return 'unavailable';
  if (code.startsWith('SQLITE_')) return SQLITE_REFUSALS.has(code) ? 'refused' : 'unavailable';
  // PostgreSQL SQLSTATE classes 22 (data exception: a bad value or encoding) and 23 (integrity
  // constraint violation). Connection failures (08), lack of resources (53), operator
  // intervention (57), deadlocks and serialization failures (40) and the rest are outages.
  return /^2[23][0-9A-Z]{3}$/.test(code) ? 'refused' : 'unavailable';
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
