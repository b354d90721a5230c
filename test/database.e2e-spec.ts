import { DataSource } from 'typeorm';
import { databaseKinds } from './support/databases.js';
import { createTestApp } from './support/test-app.js';

describe.each(databaseKinds())('database setup on %s', (database) => {
  it('migrates at start, and the migrations go down and up again', async () => {
    const sut = await createTestApp(database);
    try {
      const dataSource = sut.app.get(DataSource);
      expect(await dataSource.showMigrations()).toBe(false);
      const tables = async () =>
        (
          await dataSource.query(
            database === 'sqlite'
              ? `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('sessions', 'messages')`
              : `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('sessions', 'messages')`,
          )
        )
          .map((row: { name: string }) => row.name)
          .sort();
      expect(await tables()).toEqual(['messages', 'sessions']);

      await dataSource.undoLastMigration();
      expect(await tables()).toEqual([]);
      await dataSource.runMigrations();
      expect(await tables()).toEqual(['messages', 'sessions']);
      const append = await sut.gql(
        `mutation { appendMessage(input: { sessionId: "after-remigrate", role: USER, content: "x" }) { status } }`,
      );
      expect(append.data.appendMessage.status).toBe('PERSISTED');
    } finally {
      await sut.close();
    }
  });
});

describe('SQLite connection settings', () => {
  it.each([
    [undefined, 2],
    ['NORMAL', 1],
  ])('runs in WAL mode with SQLITE_SYNCHRONOUS=%s', async (mode, expected) => {
    const sut = await createTestApp('sqlite', mode ? { SQLITE_SYNCHRONOUS: mode } : {});
    try {
      const dataSource = sut.app.get(DataSource);
      expect(await dataSource.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      expect(await dataSource.query('PRAGMA synchronous')).toEqual([{ synchronous: expected }]);
    } finally {
      await sut.close();
    }
  });
});
