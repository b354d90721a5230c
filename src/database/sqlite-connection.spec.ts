import sqlite3 from 'sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PREPARED_LIMIT, SqliteConnection } from './sqlite-connection.js';

/** A node-sqlite3 connection of the test's own, that has run `sql`. */
async function rawConnection(path: string, sql: string): Promise<sqlite3.Database> {
  const database = await new Promise<sqlite3.Database>((resolve, reject) => {
    const opened = new sqlite3.Database(path, (error) => (error ? reject(error) : resolve(opened)));
  });
  await new Promise<void>((resolve, reject) =>
    database.exec(sql, (error) => (error ? reject(error) : resolve())),
  );
  return database;
}

const closeRaw = (database: sqlite3.Database) =>
  new Promise<void>((resolve) => database.close(() => resolve()));

describe(SqliteConnection.name, () => {
  let directory: string;
  let path: string;
  let connection: SqliteConnection | undefined;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-connection-'));
    path = join(directory, 'test.sqlite');
    await closeRaw(
      await rawConnection(
        path,
        'PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)',
      ),
    );
  });

  afterEach(async () => {
    await connection?.close().catch(() => undefined);
    connection = undefined;
    await rm(directory, { recursive: true, force: true });
  });

  it('refuses to open a file that is not there rather than create an empty database', async () => {
    await expect(SqliteConnection.open(join(directory, 'gone.sqlite'), 10)).rejects.toThrow();
  });

  it('answers rows for a statement that returns them, none for one that does not, and changes for run', async () => {
    connection = await SqliteConnection.open(path, 10);

    expect(await connection.run('INSERT INTO t (v) VALUES (?), (?)', ['a', 'b'])).toBe(2);
    expect(await connection.all('DELETE FROM t WHERE v = ?', ['b'])).toEqual([]);
    expect(await connection.all('SELECT id, v FROM t')).toEqual([{ id: 1, v: 'a' }]);
    expect(await connection.all('INSERT INTO t (v) VALUES (?) RETURNING id', ['c'])).toEqual([
      { id: 2 },
    ]);
    expect(await connection.run('UPDATE t SET v = ? WHERE v = ?', ['z', 'nothing'])).toBe(0);
  });

  it("rejects with the driver's result code, from a statement and from its preparation", async () => {
    connection = await SqliteConnection.open(path, 10);
    await connection.run('INSERT INTO t (id, v) VALUES (1, ?)', ['a']);

    const error: unknown = await connection
      .run('INSERT INTO t (id, v) VALUES (1, ?)', ['again'])
      .catch((caught: unknown) => caught);

    expect(error).toMatchObject({ code: 'SQLITE_CONSTRAINT' });
    await expect(connection.exec('NOT SQL')).rejects.toMatchObject({ code: 'SQLITE_ERROR' });
    await expect(connection.run('NOT SQL')).rejects.toMatchObject({ code: 'SQLITE_ERROR' });
    expect(connection.preparedCount).toBe(1);
  });

  it('waits the busy timeout for a lock another connection holds, then fails SQLITE_BUSY', async () => {
    const holder = await rawConnection(path, 'BEGIN IMMEDIATE');
    try {
      connection = await SqliteConnection.open(path, 50);
      const started = Date.now();
      await expect(connection.exec('BEGIN IMMEDIATE')).rejects.toMatchObject({
        code: 'SQLITE_BUSY',
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    } finally {
      await closeRaw(holder);
    }
  });

  it('keeps statements prepared by their text, at most PREPARED_LIMIT of them', async () => {
    connection = await SqliteConnection.open(path, 10);

    await connection.all('SELECT 1');
    await connection.all('SELECT 1');
    expect(connection.preparedCount).toBe(1);
    for (let n = 0; n < PREPARED_LIMIT + 10; n++) await connection.all(`SELECT ${n + 2}`);
    expect(connection.preparedCount).toBe(PREPARED_LIMIT);
    // The oldest went first; what was evicted is prepared again when asked.
    expect(await connection.all('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    expect(connection.preparedCount).toBe(PREPARED_LIMIT);
  });

  it('finalizes its statements when closed, so that the close ends an open transaction', async () => {
    connection = await SqliteConnection.open(path, 10);
    await connection.exec('BEGIN IMMEDIATE');
    await connection.run('INSERT INTO t (v) VALUES (?)', ['rolled back']);
    await connection.all('SELECT 1');
    await connection.close();

    // Had the close failed for statements left, the write lock would still be held.
    const other = await rawConnection(path, 'BEGIN IMMEDIATE; ROLLBACK');
    await closeRaw(other);

    expect(connection.preparedCount).toBe(0);
    await expect(connection.all('SELECT 1')).rejects.toThrow();
    connection = undefined;
  });
});
