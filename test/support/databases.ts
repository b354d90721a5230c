import pg from 'pg';
import { randomBytes } from 'node:crypto';

export type DatabaseKind = 'sqlite' | 'postgres';

/** The PostgreSQL server the e2e suites also run against, when set. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

let reasonPrinted = false;

/** The databases to run a suite on; says once, on stderr, why PostgreSQL is left out. */
export function databaseKinds(): DatabaseKind[] {
  if (TEST_DATABASE_URL) return ['sqlite', 'postgres'];
  if (!reasonPrinted) {
    reasonPrinted = true;
    process.stderr.write(
      'PostgreSQL e2e runs skipped: TEST_DATABASE_URL is not set (CI sets it; see README)\n',
    );
  }
  return ['sqlite'];
}

/**
 * A schema of its own on the test server, so parallel suites never see each other's rows.
 * Returns a DATABASE_URL whose connections use that schema, and a function that drops it.
 */
export async function createPostgresSchema(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set');
  const schema = `scribe_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}
