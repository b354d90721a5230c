import { type ScribeConfig } from './scribe-config.js';

/** What `npm start` says once it listens: what runs, on what, and where to call it. */
export interface StartFacts {
  readonly version: string;
  readonly config: Pick<ScribeConfig, 'database' | 'spoolDir' | 'graphqlPath'>;
  /** The address the server listens at, as Nest's getUrl() gives it. */
  readonly url: string;
}

/**
 * The few lines a start writes at the default level: the version, the database (its kind and
 * where, never its credentials), the journal's directory, the URL.
 */
export function startLines({ version, config, url }: StartFacts): string[] {
  const { database } = config;
  let where: string;
  if (database.kind === 'sqlite') {
    where = `SQLite at ${database.path}`;
  } else {
    const parsed = new URL(database.url);
    where = `PostgreSQL at ${parsed.host}${parsed.pathname}`;
  }
  return [
    `Scribe ${version} (Node ${process.version})`,
    `Database: ${where}`,
    `Journal: ${config.spoolDir}`,
    `GraphQL API ready at ${url.replace('[::1]', 'localhost')}${config.graphqlPath}`,
  ];
}
