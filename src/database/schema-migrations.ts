import { type DataSource } from 'typeorm';
import { type StartableDataSource } from './database-startup.js';
import { SchemaNewerError } from './schema-newer.error.js';

/** The recorded migrations that are not among the known ones, in recorded order. */
export function unknownMigrations(recorded: readonly string[], known: readonly string[]): string[] {
  const knownNames = new Set(known);
  return recorded.filter((name) => !knownNames.has(name));
}

/** The names in the migrations table, or none when it does not exist yet (a new database). */
async function recordedMigrations(dataSource: DataSource): Promise<string[]> {
  const table = dataSource.options.migrationsTableName ?? 'migrations';
  const runner = dataSource.createQueryRunner();
  try {
    if (!(await runner.hasTable(table))) return [];
    const rows = (await runner.query(
      `SELECT ${runner.connection.driver.escape('name')} AS name FROM ${runner.connection.driver.escape(table)}`,
    )) as { name: string }[];
    return rows.map((row) => row.name);
  } finally {
    await runner.release();
  }
}

/**
 * TypeORM's DataSource as DatabaseStartup starts it: connected, then its migrations checked
 * and run. TypeORM's own migrationsRun would run the pending ones and ignore recorded ones it
 * does not know; this refuses those first (SchemaNewerError), before anything is written.
 * As TypeORM's initialize() does when its migrations fail, a failure after connecting closes
 * the connection.
 */
export function migratingDataSource(dataSource: DataSource): StartableDataSource {
  return {
    get isInitialized() {
      return dataSource.isInitialized;
    },
    get driver() {
      return dataSource.driver;
    },
    destroy: () => dataSource.destroy(),
    initialize: async () => {
      await dataSource.initialize();
      try {
        // Built by initialize(): the migrations this code knows.
        const known = dataSource.migrations.map(
          (migration) => migration.name ?? migration.constructor.name,
        );
        const unknown = unknownMigrations(await recordedMigrations(dataSource), known);
        if (unknown.length > 0) throw new SchemaNewerError(unknown);
        await dataSource.runMigrations({ transaction: 'all' });
      } catch (error) {
        await dataSource.destroy().catch(() => undefined);
        throw error;
      }
    },
  };
}
