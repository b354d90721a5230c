import { Logger } from '@nestjs/common';
import { lstat } from 'node:fs/promises';
import { describeError } from '../common/errors/describe-error.js';
import { type DatabaseIdStore, type SpoolDatabaseRecord } from './database-id-file.js';
import { DATABASE_ID_FILE } from './segment-names.js';

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

function mismatch(spoolId: string, databaseId: string): string {
  return `its ${DATABASE_ID_FILE} names database ${spoolId}, and this instance's database is ${databaseId}`;
}

/** An append or a probe of a spool that belongs to another database. */
export class SpoolOfAnotherDatabase extends Error {
  readonly code = 'SPOOL_OF_ANOTHER_DATABASE';
}

/**
 * Keeps a spool to the instances of one database. The check needs the database, so it is made
 * when adoption asks (at start, then at every adoption round, so that a fixed configuration is
 * noticed without a restart), never at module init: until the database has answered once, the
 * journals of other instances wait, while this instance's own journaling goes on.
 */
export class DatabaseBinding {
  private view: DatabaseBindingView = {
    databaseCheck: DatabaseCheck.PENDING,
    databaseId: null,
    instanceDatabaseId: null,
    databaseCheckReason: 'the database has not answered yet',
  };
  private running: Promise<boolean> | null = null;
  // While the check is pending: why this instance may not journal here (null: it may), the
  // last such answer, and the last one logged (each said once).
  private provisional: Promise<string | null> | null = null;
  private provisionalRefusal: string | null = null;
  private provisionalLogged: string | null = null;

  /** `foreignSegments` counts the segments of other instances in the directory. */
  constructor(
    private readonly directory: string,
    private readonly idFile: DatabaseIdStore,
    private readonly database: SpoolDatabase,
    private readonly foreignSegments: () => Promise<number>,
    private readonly logger: Pick<Logger, 'log' | 'warn' | 'error'> = new Logger('Journal'),
    // Whether the directory is itself a directory (lstat): not a symlink, not gone.
    private readonly realDirectory: (directory: string) => Promise<boolean> = isRealDirectory,
  ) {}

  get status(): DatabaseBindingView {
    if (this.view.databaseCheck === DatabaseCheck.PENDING && this.provisionalRefusal !== null) {
      return { ...this.view, databaseCheckReason: this.provisionalRefusal };
    }
    return { ...this.view };
  }

  /** Checks (again) that the spool is this instance's database's: true when it is. */
  verify(): Promise<boolean> {
    this.running ??= this.check().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /**
   * Rejects when the spool is another database's. Before the check (the database has not
   * answered), this instance journals only into a spool claimed for where its database is
   * configured to be, claiming a spool that names none provisionally first: so that an
   * instance of another database, started later on the same spool, neither adopts these
   * journals nor adds its own to those of a database it cannot know yet.
   */
  async assertJournalable(): Promise<void> {
    if (this.view.databaseCheck === DatabaseCheck.VERIFIED) return;
    if (this.view.databaseCheck === DatabaseCheck.REFUSED) {
      throw new SpoolOfAnotherDatabase(
        `the spool belongs to another database: ${this.view.databaseCheckReason}`,
      );
    }
    this.provisional ??= this.claimProvisionally();
    const refusal = await this.provisional;
    if (refusal !== null && this.view.databaseCheck === DatabaseCheck.PENDING) {
      throw new SpoolOfAnotherDatabase(`the spool may belong to another database: ${refusal}`);
    }
  }

  private async claimProvisionally(): Promise<string | null> {
    const location = this.database.location;
    // Never through a SPOOL_DIR that is a symlink (or gone): database.id would be read and
    // claimed wherever it points, outside SPOOL_DIR. The journal refuses such a directory
    // itself (BUFFERED); the claim waits until it is a directory again.
    if (!(await this.realDirectory(this.directory))) {
      this.provisional = null;
      return null;
    }
    let spool: SpoolDatabaseRecord;
    try {
      spool =
        (await this.idFile.read()) ?? (await this.idFile.create({ id: PROVISIONAL_ID, location }));
    } catch {
      // An unusable database.id: as before, journaling goes on (the check says why it cannot
      // be verified); it is read again by the next append.
      this.provisional = null;
      return null;
    }
    if (spool.location === null || spool.location === location) {
      this.provisionalRefusal = null;
      return null;
    }
    const named = spool.id === PROVISIONAL_ID ? 'a database' : `database ${spool.id}`;
    const reason = `its ${DATABASE_ID_FILE} names ${named} at ${spool.location}, and this instance's database, at ${location}, has not answered yet: nothing is journaled here until it has`;
    this.provisionalRefusal = reason;
    if (this.provisionalLogged !== reason) {
      this.provisionalLogged = reason;
      this.logger.warn(`Not journaling into the spool at ${this.directory}: ${reason}`);
    }
    return reason;
  }

  private async check(): Promise<boolean> {
    // database.id is read afresh by the next append that needs it.
    this.provisional = null;
    let database: DatabaseIdentity;
    try {
      database = await this.database.identity();
    } catch (error) {
      // The spool's owner does not change while the database is away: an earlier verdict stands.
      if (this.view.databaseCheck === DatabaseCheck.PENDING) {
        this.pending(null, `the database has not answered yet: ${describeError(error)}`);
      }
      return this.view.databaseCheck === DatabaseCheck.VERIFIED;
    }
    try {
      const spool = await this.idFile.read();
      const foreign = spool === null || spool.id === database.id ? 0 : await this.foreignSegments();
      const decision = decideBinding(database, spool, foreign);
      if (decision.kind === 'refuse') {
        return this.refuse(database.id, spool?.id ?? null, decision.reason);
      }
      if (decision.kind === 'match') return this.verified(database.id, decision.kind);
      const mine = { id: database.id, location: database.location };
      const written =
        decision.kind === 'claim'
          ? await this.idFile.create(mine)
          : await this.idFile.replace(mine);
      // (A confirm replaces only a provisional claim; one replaced meanwhile is read back.)
      // Another database's instance claimed it first.
      if (written.id !== database.id) {
        return this.refuse(database.id, written.id, mismatch(written.id, database.id));
      }
      return this.verified(database.id, decision.kind);
    } catch (error) {
      this.pending(database.id, `${DATABASE_ID_FILE} cannot be used: ${describeError(error)}`);
      return false;
    }
  }

  private verified(databaseId: string, how: BindingDecision['kind']): true {
    const was = this.view.databaseCheck;
    this.view = {
      databaseCheck: DatabaseCheck.VERIFIED,
      databaseId,
      instanceDatabaseId: databaseId,
      databaseCheckReason: null,
    };
    if (was !== DatabaseCheck.VERIFIED) {
      const done =
        how === 'match'
          ? 'belongs to'
          : how === 'claim' || how === 'confirm'
            ? 'claimed for'
            : 'taken over for';
      this.logger.log(`The spool at ${this.directory} ${done} database ${databaseId}`);
    }
    return true;
  }

  private refuse(databaseId: string, spoolId: string | null, reason: string): false {
    const changed = this.view.databaseCheckReason !== reason;
    this.view = {
      databaseCheck: DatabaseCheck.REFUSED,
      databaseId: spoolId,
      instanceDatabaseId: databaseId,
      databaseCheckReason: reason,
    };
    if (changed) {
      this.logger.error(
        `Refusing the spool at ${this.directory}: ${reason}. Its journals are not adopted and nothing is journaled there (what the database cannot take is BUFFERED); one SPOOL_DIR serves the instances of one database only`,
      );
    }
    return false;
  }

  private pending(databaseId: string | null, reason: string): void {
    const changed = this.view.databaseCheckReason !== reason;
    this.view = {
      databaseCheck: DatabaseCheck.PENDING,
      databaseId: null,
      instanceDatabaseId: databaseId,
      databaseCheckReason: reason,
    };
    if (changed) {
      this.logger.warn(
        `The spool at ${this.directory} is not verified as this database's yet (${reason}); journals of other instances wait until it is`,
      );
    }
  }
}

async function isRealDirectory(directory: string): Promise<boolean> {
  try {
    return (await lstat(directory)).isDirectory();
  } catch {
    return false;
  }
}
