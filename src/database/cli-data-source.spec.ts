import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { CliDataSource, missingSqliteDatabase } from './cli-data-source.js';

describe(CliDataSource.name, () => {
  let directory: string;
  let path: string;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-cli-'));
    path = join(directory, 'scribe.sqlite');
  });

  afterEach(() => rm(directory, { recursive: true, force: true }));

  const sut = () => new CliDataSource({ kind: 'sqlite', path, synchronous: 'FULL' });

  /** The refusal initialize() rejects with: its message, and whether its stack is one line. */
  async function refusal(source: CliDataSource) {
    const error = (await source.initialize().catch((caught: unknown) => caught)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(source.isInitialized).toBe(false);
    return { message: error.message, oneLine: error.stack === `Error: ${error.message}` };
  }

  it('says why it refuses a database that is not there', () => {
    expect(missingSqliteDatabase('/x/scribe.sqlite')).toBe(
      'No SQLite database at /x/scribe.sqlite: the migration scripts act on a database that exists (check DATA_DIR); `npm start` creates and migrates a new one',
    );
  });

  it('refuses a missing file in one line, and makes neither it nor its directory', async () => {
    path = join(directory, 'mistyped', 'scribe.sqlite');
    expect(await refusal(sut())).toEqual({ message: missingSqliteDatabase(path), oneLine: true });
    await expect(stat(join(directory, 'mistyped'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses an empty file (SQLite would fill it), and leaves it empty', async () => {
    await writeFile(path, '');
    expect(await refusal(sut())).toEqual({ message: missingSqliteDatabase(path), oneLine: true });
    expect((await stat(path)).size).toBe(0);
  });

  it('refuses a directory where the file belongs', async () => {
    await mkdir(path);
    expect(await refusal(sut())).toEqual({ message: missingSqliteDatabase(path), oneLine: true });
  });

  it("refuses a file that is not SQLite's in one line that names it", async () => {
    await writeFile(path, 'not a database, but long enough to be taken for a header\n'.repeat(4));
    expect(await refusal(sut())).toEqual({
      message: `Could not open the SQLite database at ${path}: Error: SQLITE_NOTADB: file is not a database`,
      oneLine: true,
    });
    expect(await readFile(path, 'utf8')).toMatch(/^not a database/);
  });

  it('opens an existing database, migrations not run', async () => {
    const maker = new DataSource({ type: 'sqlite', database: path });
    await maker.initialize();
    await maker.query('CREATE TABLE "kept" ("id" integer)');
    await maker.destroy();

    const source = sut();
    await source.initialize();
    try {
      expect(source.isInitialized).toBe(true);
      expect(source.migrations.length).toBeGreaterThan(0);
      expect(await source.query(`SELECT name FROM sqlite_master WHERE type = 'table'`)).toEqual([
        { name: 'kept' },
      ]);
    } finally {
      await source.destroy();
    }
  });

  it('hands a PostgreSQL URL to TypeORM as it is', () => {
    const url = 'postgres://postgres@127.0.0.1:1/none';
    const source = new CliDataSource({ kind: 'postgres', url });
    expect(source.options).toMatchObject({ type: 'postgres', url });
  });
});
