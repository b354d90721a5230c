import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';

/**
 * Whether the database is connected and its migrations have run: until then nothing may read
 * or write it (the schema may be older than the code, or absent). The one signal for whoever
 * must wait for it (the write path, the reads, checks made when the database first answers).
 */
export abstract class DatabaseReadiness {
  /** True once the database is connected and migrated; it stays true from then on. */
  abstract get isReady(): boolean;

  /** Resolves once the database is connected and migrated; never rejects. */
  abstract get ready(): Promise<void>;

  /** Throws DatabaseNotReadyError until the database is connected and migrated. */
  assertReady(): void {
    if (!this.isReady) throw new DatabaseNotReadyError(this.waitingFor());
  }

  /** Why the database is not up yet (its last error), for the error and the logs. */
  protected abstract waitingFor(): string | null;
}

/**
 * The database has not been connected and migrated since this instance started (it was
 * unreachable, locked or failing at start, and the background start retries it). An outage
 * like any other (see classifyDatabaseError): writes are journaled, and a read answers
 * DATABASE_UNAVAILABLE. The client is not told why (a host, a path): `reason` is for the logs.
 */
export class DatabaseNotReadyError extends ScribeException {
  constructor(readonly reason: string | null) {
    super(
      ScribeErrorCode.DatabaseUnavailable,
      'The database is not connected and migrated yet (this instance started while it was unreachable and keeps trying); appends are journaled meanwhile. Retry the read later.',
    );
  }
}
