import { existsSync } from 'node:fs';
import sqlite3 from 'sqlite3';
import { DataSource } from 'typeorm';
import { type DatabaseSettings } from '../config/scribe-config.js';
import { buildDataSourceOptions } from './data-source-options.js';

/** Why the migration scripts refuse a SQLite database that is not there. */
export function missingSqliteDatabase(path: string): string {
  return `No SQLite database at ${path}: the migration scripts act on a database that exists (check DATA_DIR); \`npm start\` creates and migrates a new one`;
}

/**
 * The DataSource the TypeORM CLI is given (npm run migration:show|run|revert). On SQLite it
 * opens an existing file only: TypeORM would make DATA_DIR and an empty database for a path
 * that names none, so a mistyped DATA_DIR would show every migration as pending, and
 * `migration:run` would fill a database no server uses.
 */
export class CliDataSource extends DataSource {
  constructor(private readonly settings: DatabaseSettings) {
    const options = buildDataSourceOptions(settings);
    super(
      options.type === 'sqlite'
        ? {
            ...options,
            // No OPEN_CREATE; OPEN_URI also stops TypeORM making the directory (a plain path is
            // still a path under it).
            flags: sqlite3.OPEN_READWRITE | sqlite3.OPEN_FULLMUTEX | sqlite3.OPEN_URI,
          }
        : options,
    );
  }

  override async initialize(): Promise<this> {
    if (this.settings.kind === 'sqlite' && !existsSync(this.settings.path)) {
      const refusal = new Error(missingSqliteDatabase(this.settings.path));
      // The CLI prints the stack: a refusal of the operator's setting is the line alone.
      refusal.stack = `${refusal.name}: ${refusal.message}`;
      throw refusal;
    }
    return super.initialize();
  }
}
