/**
 * The name of Scribe's TypeORM connection: every DataSource and repository token of Scribe's
 * is this connection's, so that a host app's own default connection never collides with it.
 */
export const SCRIBE_CONNECTION = 'scribe';

/**
 * DB_RETRY_INTERVAL_MS: the background retry's period; 0 turns it off. One token for both that
 * read it: DatabaseHealth (whether a failing database is left to the retry alone) and the write
 * path's TranscriptRecovery (which runs the retry), so that an override moves both.
 */
export const DB_RETRY_INTERVAL_MS = Symbol('DB_RETRY_INTERVAL_MS');
