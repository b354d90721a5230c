import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { type SpoolDatabaseRecord } from './database-id-file.js';
import { DATABASE_ID_FILE } from './segment-names.js';

// What a spool's binding to one database is made of: the port to the database, the states of
// the check, and the rule that decides it (DatabaseBinding, beside this file, applies it).

/**
 * What the journal needs of the database: its identity, given at first use (the composition
 * root binds this to database/'s DatabaseIdentity). Rejects while the database does not answer.
 */
export abstract class SpoolDatabase {
  /** Where the database is as configured (without credentials): known before it answers. */
  abstract readonly location: string;

  /**
   * The id, whether this call gave the database its identity (it had none before), and where
   * the database is (without credentials).
   */
  abstract identity(): Promise<DatabaseIdentity>;
}

export interface DatabaseIdentity {
  id: string;
  created: boolean;
  location: string;
}

/** Where the check stands: not made yet (or could not be), the spool is this database's, or not. */
export enum DatabaseCheck {
  PENDING = 'PENDING',
  VERIFIED = 'VERIFIED',
  REFUSED = 'REFUSED',
}

/** What spoolStatus shows of the check. */
export interface DatabaseBindingView {
  databaseCheck: DatabaseCheck;
  /** The database the spool belongs to, as its database.id names it; null when none does yet. */
  databaseId: string | null;
  /** This instance's database; null until it has answered. */
  instanceDatabaseId: string | null;
  /** Why the check refused, or why it could not be made; null when verified. */
  databaseCheckReason: string | null;
}

/**
 * What database.id names while the instance that wrote it had not heard from its database yet:
 * the spool is claimed for the database at the location on its second line, to be confirmed
 * (or refused) once a database answers. No database id is this word (they are hex digits).
 */
export const PROVISIONAL_ID = 'provisional';

/** What to do with the spool, from the database's identity and the spool's. */
export type BindingDecision =
  | { kind: 'match' }
  | { kind: 'claim' }
  | { kind: 'confirm' }
  | { kind: 'take-over' }
  | { kind: 'refuse'; reason: string };

/**
 * A spool no database has claimed (new, or written by a Scribe that kept no database.id) is
 * claimed; one of another database is refused, with two exceptions for a database that has
 * only now got its identity: it takes over a spool that holds no other instance's segments
 * (nothing there is owed to anyone), and one whose database was where this one is (the SQLite
 * file deleted and made anew, a schema dropped and created again: what the old one was owed
 * is owed to its successor). A new database elsewhere pointed at a spool with segments of
 * another is refused: they are owed to that other one.
 */
export function decideBinding(
  database: DatabaseIdentity,
  spool: SpoolDatabaseRecord | null,
  foreignSegments: number,
): BindingDecision {
  if (spool === null) return { kind: 'claim' };
  if (spool.id === database.id) return { kind: 'match' };
  // Claimed before any database answered: by an instance of this database if it is where
  // that instance's database was configured to be; else its journals may be another's.
  if (spool.id === PROVISIONAL_ID) {
    if (spool.location === null || spool.location === database.location) {
      return { kind: 'confirm' };
    }
    return {
      kind: 'refuse',
      reason: `its ${DATABASE_ID_FILE} was written for the database at ${spool.location} before that database answered, and this instance's database is ${database.id} at ${database.location}`,
    };
  }
  // Only a successor takes over: a database made anew where the spool's was. A new database
  // elsewhere may be one of two that started at once on an empty spool, the other of which
  // claimed it a moment before (and journals into it): taking over would hand its journal to
  // this database.
  if (database.created && spool.location === database.location) return { kind: 'take-over' };
  const fresh = database.created
    ? ` (a new database, not where the spool's database was; the spool holds ${foreignSegments} segment(s) of other instances)`
    : '';
  return { kind: 'refuse', reason: mismatch(spool.id, database.id) + fresh };
}

export function mismatch(spoolId: string, databaseId: string): string {
  return `its ${DATABASE_ID_FILE} names database ${spoolId}, and this instance's database is ${databaseId}`;
}

/** An append or a probe of a spool that belongs to another database. */
export class SpoolOfAnotherDatabase extends Error {
  readonly code = ScribeErrorCode.SpoolOfAnotherDatabase;
}
