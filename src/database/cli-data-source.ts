import { statSync } from 'node:fs';
import { describeError } from '../common/errors/describe-error.js';
import sqlite3 from 'sqlite3';
import { DataSource } from 'typeorm';
import { type DatabaseSettings } from '../config/scribe-config.js';
import { buildDataSourceOptions } from './data-source-options.js';

/** Why the migration scripts refuse a SQLite database that is not there. */
export function missingSqliteDatabase(path: string): string {
  return `No SQLite database at ${path}: the migration scripts act on a database that exists (check DATA_DIR); \`npm start\` creates and migrates a new one`;
}

/** An error the CLI prints as one line: the refusal of an operator's setting, no stack. */
function oneLine(message: string): Error {
  const error = new Error(message);
  error.stack = `${error.name}: ${message}`;
  return error;
}

/** A file that holds a database: a regular file, not empty (SQLite would fill an empty one). */
function holdsDatabase(path: string): boolean {
  const found = statSync(path, { throwIfNoEntry: false });
  return found !== undefined && found.isFile() && found.size > 0;
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
    if (this.settings.kind !== 'sqlite') return super.initialize();
    const { path } = this.settings;
    if (!holdsDatabase(path)) throw oneLine(missingSqliteDatabase(path));
    try {
      return await super.initialize();
    } catch (error) {
      // Not a database (SQLITE_NOTADB), unreadable, locked: one line that names the file.
      throw oneLine(`Could not open the SQLite database at ${path}: ${describeError(error)}`);
    }
  }
}
