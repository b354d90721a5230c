import 'reflect-metadata';
import { resolveScribeConfig } from './config/resolve-scribe-config.js';
import { scribeOptionsFromEnvironment } from './config/scribe-options-from-environment.js';
import { CliDataSource } from './database/cli-data-source.js';

// The TypeORM CLI's entry point (npm run migration:show, migration:run, migration:revert): the
// database `npm start` would open, from the same variables (DATA_DIR, DATABASE_URL, …), checked
// by the same rules. The CLI takes a file that exports exactly one DataSource instance.
export const dataSource = new CliDataSource(
  resolveScribeConfig(scribeOptionsFromEnvironment(process.env)).database,
);
