/**
 * The database holds migrations this code does not know: a newer Scribe has migrated it. Not
 * an outage: retrying cannot help, and running this older code against a newer schema could
 * write rows the newer code misreads. The start is refused, the data left as it is.
 */
export class SchemaNewerError extends Error {
  constructor(readonly unknown: readonly string[]) {
    super(
      `The database schema is newer than this Scribe: it records migration(s) ${unknown.join(', ')} that this version does not know; run the newer version, or revert them with its npm run migration:revert`,
    );
    this.name = 'SchemaNewerError';
  }
}
