import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { migratingDataSource, unknownMigrations } from './schema-migrations.js';
import { SchemaNewerError } from './schema-newer.error.js';

describe(unknownMigrations.name, () => {
  const known = ['Initial1', 'Heartbeat2', 'Identity3'];

  it('finds none in a database this code migrated, or one it has not migrated fully', () => {
    expect(unknownMigrations([], known)).toEqual([]);
    expect(unknownMigrations(['Initial1'], known)).toEqual([]);
    expect(unknownMigrations(known, known)).toEqual([]);
  });

  it('names each recorded migration this code does not know, in recorded order', () => {
    expect(unknownMigrations([...known, 'Later5', 'Later4'], known)).toEqual(['Later5', 'Later4']);
  });
});

/** A migration that makes one table, or fails when `fails`. */
function migration(name: string, table: string, fails = false): new () => MigrationInterface {
  const made = class implements MigrationInterface {
    name = name;
    async up(runner: QueryRunner): Promise<void> {
      await runner.query(`CREATE TABLE "${table}" ("id" integer)`);
      if (fails) throw new Error(`${name} failed`);
    }
    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE "${table}"`);
    }
  };
  return made;
}

describe(migratingDataSource.name, () => {
  let directory: string;
  let path: string;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-migrations-'));
    path = join(directory, 'db.sqlite');
  });

  afterEach(() => rm(directory, { recursive: true, force: true }));

  const source = (
    migrations: (new () => MigrationInterface)[],
    migrationsTableName?: string,
  ): DataSource =>
    new DataSource({ type: 'sqlite', database: path, migrations, migrationsTableName });

  /** What the database holds, read by a connection of its own. */
  async function contents(table = 'migrations') {
    const reader = source([]);
    await reader.initialize();
    try {
      const tables = await reader.query<{ name: string }[]>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
      );
      const names = tables.map((row) => row.name);
      const recorded = names.includes(table)
        ? await reader.query<{ name: string }[]>(`SELECT name FROM "${table}" ORDER BY id`)
        : [];
      return { tables: names, recorded: recorded.map((row) => row.name) };
    } finally {
      await reader.destroy();
    }
  }

  it('connects and runs the pending migrations, recording them', async () => {
    const dataSource = source([
      migration('One1700000000001', 'one'),
      migration('Two1700000000002', 'two'),
    ]);
    const sut = migratingDataSource(dataSource);
    expect(sut.isInitialized).toBe(false);

    await sut.initialize();

    expect(sut.isInitialized).toBe(true);
    expect(sut.driver).toBe(dataSource.driver);
    await sut.destroy();
    expect(sut.isInitialized).toBe(false);
    expect(await contents()).toEqual({
      tables: ['migrations', 'one', 'two'],
      recorded: ['One1700000000001', 'Two1700000000002'],
    });
  });

  it('runs only those not recorded yet, in the table the options name', async () => {
    const first = migratingDataSource(source([migration('One1700000000001', 'one')], 'schema_log'));
    await first.initialize();
    await first.destroy();

    const second = migratingDataSource(
      source(
        [migration('One1700000000001', 'one'), migration('Two1700000000002', 'two')],
        'schema_log',
      ),
    );
    await second.initialize();
    await second.destroy();

    expect(await contents('schema_log')).toEqual({
      tables: ['one', 'schema_log', 'two'],
      recorded: ['One1700000000001', 'Two1700000000002'],
    });
  });

  it('refuses a database that records a migration it does not know, runs nothing, and closes', async () => {
    const newer = migratingDataSource(
      source([migration('One1700000000001', 'one'), migration('Nine1700000000009', 'nine')]),
    );
    await newer.initialize();
    await newer.destroy();
    const dataSource = source([
      migration('One1700000000001', 'one'),
      migration('Two1700000000002', 'two'),
    ]);
    const sut = migratingDataSource(dataSource);

    const refusal = await sut.initialize().catch((error: unknown) => error);

    expect(refusal).toBeInstanceOf(SchemaNewerError);
    expect((refusal as SchemaNewerError).unknown).toEqual(['Nine1700000000009']);
    expect(sut.isInitialized).toBe(false);
    expect(await contents()).toEqual({
      tables: ['migrations', 'nine', 'one'],
      recorded: ['One1700000000001', 'Nine1700000000009'],
    });
  });

  it('undoes every migration of the run when one fails (one transaction), and closes', async () => {
    const sut = migratingDataSource(
      source([migration('One1700000000001', 'one'), migration('Two1700000000002', 'two', true)]),
    );

    await expect(sut.initialize()).rejects.toThrow('Two1700000000002 failed');

    expect(sut.isInitialized).toBe(false);
    expect(await contents()).toEqual({ tables: ['migrations'], recorded: [] });
  });
});
