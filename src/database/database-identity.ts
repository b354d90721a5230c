import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { type DataSource } from 'typeorm';
import { type DatabaseSettings } from '../config/scribe-config.js';

/** The database's identity, whether this very call gave it one, and where the database is. */
export interface DatabaseIdentityAnswer {
  id: string;
  created: boolean;
  location: string;
}

/**
 * Where a database is, without credentials: the SQLite file's absolute path, or PostgreSQL's
 * user, host, port, database and connection options (the schema, for one).
 */
export function databaseLocation(settings: DatabaseSettings): string {
  if (settings.kind === 'sqlite') return `sqlite:${resolve(settings.path)}`;
  const url = new URL(settings.url);
  const options = url.searchParams.get('options');
  return `postgres://${url.username}@${url.host}${url.pathname}${options ? ` ${options}` : ''}`;
}

const SELECT_ID = `SELECT "database_id" FROM "scribe_database" WHERE "slot" = 1`;

/**
 * Which database this is: a random id in the one row of `scribe_database`, given at first use.
 * Instances that start at once race for it safely: each inserts its own candidate only if no
 * row is there, then all read the one row that won. Read through TypeORM's connection, so that
 * it answers only once the database does and its migrations have run.
 */
export class DatabaseIdentity {
  constructor(
    private readonly dataSource: DataSource,
    /** Where the database is configured to be (without credentials); see databaseLocation. */
    readonly location: string,
    private readonly candidate: () => string = () => randomBytes(8).toString('hex'),
  ) {}

  /** Rejects while the database does not answer (or has no scribe_database table yet). */
  async identity(): Promise<DatabaseIdentityAnswer> {
    const existing = await this.read();
    if (existing !== null) return { id: existing, created: false, location: this.location };
    const candidate = this.candidate();
    const [id, at] = this.dataSource.options.type === 'postgres' ? ['$1', '$2'] : ['?', '?'];
    await this.dataSource.query(
      `INSERT INTO "scribe_database" ("slot", "database_id", "created_at") VALUES (1, ${id}, ${at}) ON CONFLICT ("slot") DO NOTHING`,
      [candidate, Date.now()],
    );
    const stored = await this.read();
    if (stored === null) throw new Error('the database identity row is missing after its insert');
    return { id: stored, created: stored === candidate, location: this.location };
  }

  private async read(): Promise<string | null> {
    const rows = await this.dataSource.query<{ database_id: string }[]>(SELECT_ID);
    return rows[0]?.database_id ?? null;
  }
}
