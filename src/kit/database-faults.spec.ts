import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { noFaults, proxyFaults, sqliteFaults } from './database-faults.js';
import { type TcpProxy } from './tcp-proxy.js';

/** Another connection to the file, as Scribe's own would be: it does not wait for a lock. */
function connect(path: string): Promise<sqlite3.Database> {
  return new Promise((resolve, reject) => {
    const database = new sqlite3.Database(path, (error) => {
      if (error) return reject(error);
      database.configure('busyTimeout', 0);
      resolve(database);
    });
  });
}

const exec = (database: sqlite3.Database, sql: string) =>
  new Promise<void>((resolve, reject) =>
    database.exec(sql, (error) => (error ? reject(error) : resolve())),
  );

const close = (database: sqlite3.Database) =>
  new Promise<void>((resolve, reject) =>
    database.close((error) => (error ? reject(error) : resolve())),
  );

describe(sqliteFaults.name, () => {
  let dir: string;
  let path: string;
  let other: sqlite3.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scribe-faults-'));
    path = join(dir, 'scribe.sqlite');
    other = await connect(path);
    await exec(other, 'CREATE TABLE t (n INTEGER)');
  });

  afterEach(async () => {
    await close(other);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes the write lock while down, so that another writer gets SQLITE_BUSY', async () => {
    const faults = sqliteFaults(path);
    expect(faults.isDown).toBe(false);

    await faults.databaseDown();
    expect(faults.isDown).toBe(true);
    await expect(exec(other, 'INSERT INTO t VALUES (1)')).rejects.toMatchObject({
      code: 'SQLITE_BUSY',
    });

    await faults.databaseUp();
    expect(faults.isDown).toBe(false);
    await expect(exec(other, 'INSERT INTO t VALUES (2)')).resolves.toBeUndefined();
  });

  it('can go down and up again, and ignores a second down or an up while up', async () => {
    const faults = sqliteFaults(path);
    await faults.databaseUp();
    expect(faults.isDown).toBe(false);

    await faults.databaseDown();
    await faults.databaseDown();
    expect(faults.isDown).toBe(true);
    await faults.databaseUp();
    // One holder only: had the second down opened another, its lock would still be held.
    await expect(exec(other, 'INSERT INTO t VALUES (1)')).resolves.toBeUndefined();

    await faults.databaseDown();
    await expect(exec(other, 'INSERT INTO t VALUES (2)')).rejects.toMatchObject({
      code: 'SQLITE_BUSY',
    });
    await faults.databaseUp();
    await expect(exec(other, 'INSERT INTO t VALUES (3)')).resolves.toBeUndefined();
  });

  it('waits for a write that holds the lock when the outage starts', async () => {
    await exec(other, 'BEGIN EXCLUSIVE');
    const faults = sqliteFaults(path);
    let settled = false;
    const down = faults.databaseDown().finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(settled).toBe(false);
    expect(faults.isDown).toBe(false);

    await exec(other, 'COMMIT');
    await down;
    expect(faults.isDown).toBe(true);
    await faults.databaseUp();
  });

  it('says so when the lock cannot be taken for another reason than a writer', async () => {
    const garbage = join(dir, 'not-a-database');
    writeFileSync(garbage, 'x'.repeat(4096));
    const faults = sqliteFaults(garbage);
    await expect(faults.databaseDown()).rejects.toThrow(
      /^the kit could not take the SQLite write lock: Error: SQLITE_NOTADB/,
    );
    expect(faults.isDown).toBe(false);
  });
});

describe(proxyFaults.name, () => {
  it('cuts the proxy when down and restores it when up', async () => {
    const cut = jest.fn();
    const restore = jest.fn();
    const faults = proxyFaults({ cut, restore } as unknown as TcpProxy);
    expect(faults.isDown).toBe(false);

    await expect(faults.databaseDown()).resolves.toBeUndefined();
    expect(cut).toHaveBeenCalledTimes(1);
    expect(restore).not.toHaveBeenCalled();
    expect(faults.isDown).toBe(true);

    await expect(faults.databaseUp()).resolves.toBeUndefined();
    expect(restore).toHaveBeenCalledTimes(1);
    expect(cut).toHaveBeenCalledTimes(1);
    expect(faults.isDown).toBe(false);
  });
});

describe(noFaults.name, () => {
  it('refuses both, with the reason, and is never down', async () => {
    const faults = noFaults('PostgreSQL was given with faults: false');
    expect(faults.isDown).toBe(false);
    await expect(faults.databaseDown()).rejects.toThrow(
      'database faults are off: PostgreSQL was given with faults: false',
    );
    await expect(faults.databaseUp()).rejects.toThrow(
      'database faults are off: PostgreSQL was given with faults: false',
    );
    expect(faults.isDown).toBe(false);
  });
});
