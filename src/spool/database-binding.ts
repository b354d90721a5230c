import { Logger } from '@nestjs/common';
import { lstat } from 'node:fs/promises';
import { describeError } from '../common/errors/describe-error.js';
import {
  DatabaseCheck,
  PROVISIONAL_ID,
  SpoolOfAnotherDatabase,
  decideBinding,
  mismatch,
  type BindingDecision,
  type DatabaseBindingView,
  type DatabaseIdentity,
  type SpoolDatabase,
} from './database-binding-rules.js';
import { type DatabaseIdStore, type SpoolDatabaseRecord } from './database-id-file.js';
import { DATABASE_ID_FILE } from './segment-names.js';

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
