/**
 * The name of Scribe's TypeORM connection: every DataSource and repository token of Scribe's
 * is this connection's, so that a host app's own default connection never collides with it.
 */
export const SCRIBE_CONNECTION = 'scribe';
