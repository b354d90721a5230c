import { getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { MIGRATIONS } from '../src/database/data-source-options.js';
import { SCRIBE_CONNECTION } from '../src/database/database.tokens.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp } from './support/test-app.js';

const TABLES = ['messages', 'scribe_heartbeat', 'sessions'];

describe.each(databaseKinds())('database setup on %s', (database) => {
  it('migrates at start, and every migration goes down and up again', async () => {
    const sut = await createTestApp(database);
    try {
      const dataSource = sut.app.get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION));
      expect(await dataSource.showMigrations()).toBe(false);
      const tables = async () =>
        (
          await dataSource.query(
            database === 'sqlite'
              ? `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${TABLES.map((t) => `'${t}'`).join(', ')})`
              : `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN (${TABLES.map((t) => `'${t}'`).join(', ')})`,
          )
        )
          .map((row: { name: string }) => row.name)
          .sort();
      expect(await tables()).toEqual(TABLES);

      for (let step = 0; step < MIGRATIONS.length; step++) await dataSource.undoLastMigration();
      expect(await tables()).toEqual([]);
      await dataSource.runMigrations();
      expect(await tables()).toEqual(TABLES);
      // The write connection (not TypeORM's) sees the schema built again.
      const append = await sut.gql(
        `mutation { appendMessage(input: { sessionId: "after-remigrate", role: USER, content: "x" }) { status } }`,
      );
      expect(append.data.appendMessage.status).toBe('PERSISTED');
      expect((await sut.http().get('/health')).body.details.database.status).toBe('up');
    } finally {
      await sut.close();
    }
  });
});
