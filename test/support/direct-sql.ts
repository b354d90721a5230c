import pg from 'pg';
import sqlite3 from 'sqlite3';

// SQL run straight on a suite's database, past Scribe: a trigger standing in for a constraint
// a migration or a DBA added, or its removal.

/** Runs `sql` (several statements allowed) on the SQLite database `file`. */
export async function execSqlite(file: string, sql: string): Promise<void> {
  const database = await new Promise<sqlite3.Database>((resolveOpen, rejectOpen) => {
    const opened = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (error) =>
      error ? rejectOpen(error) : resolveOpen(opened),
    );
  });
  try {
    database.configure('busyTimeout', 5000);
    await new Promise<void>((resolveRun, rejectRun) =>
      database.exec(sql, (error) => (error ? rejectRun(error) : resolveRun())),
    );
  } finally {
    await new Promise<void>((resolveClose) => database.close(() => resolveClose()));
  }
}

/** Runs `sql` on the PostgreSQL database (and schema) of `url`. */
export async function execPostgres(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A trigger refusing the insert of a message whose content matches, as a constraint added by a
 * migration or a DBA would: its SQL for each database, keyed by the names of execSqlite's and
 * execPostgres's kinds, and the SQL that drops it. `sqliteWhen` and `postgresWhen` test `NEW`.
 * On PostgreSQL the error is 23514 (check_violation): a refusal of the row, not an outage.
 */
export function refusingTrigger(name: string, sqliteWhen: string, postgresWhen: string) {
  return {
    sqlite: `CREATE TRIGGER ${name} BEFORE INSERT ON messages
      WHEN ${sqliteWhen} BEGIN SELECT RAISE(ABORT, '${name}'); END`,
    postgres: `
      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF ${postgresWhen} THEN
          RAISE EXCEPTION '${name}' USING ERRCODE = '23514';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER ${name} BEFORE INSERT ON messages
        FOR EACH ROW EXECUTE FUNCTION ${name}();`,
    dropSqlite: `DROP TRIGGER ${name}`,
    dropPostgres: `DROP TRIGGER ${name} ON messages`,
  };
}
