import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options.js';
import { DatabaseIdentity, databaseLocation } from './database-identity.js';

describe(DatabaseIdentity.name, () => {
  let directory: string;
  let sources: DataSource[];

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-identity-'));
    sources = [];
  });

  afterEach(async () => {
    for (const source of sources) if (source.isInitialized) await source.destroy();
    await rm(directory, { recursive: true, force: true });
  });

  /** A connection of its own to one SQLite file, migrated, as each instance has. */
  async function connect(): Promise<DataSource> {
    const source = new DataSource(
      buildDataSourceOptions({
        kind: 'sqlite',
        path: join(directory, 'scribe.sqlite'),
        synchronous: 'FULL',
      }),
    );
    sources.push(source);
    await source.initialize();
    await source.runMigrations();
    return source;
  }

  it('gives a database without identity the candidate, and says it created it', async () => {
    const sut = new DatabaseIdentity(await connect(), 'sqlite:/here', () => 'candidate-1');
    expect(await sut.identity()).toEqual({
      id: 'candidate-1',
      created: true,
      location: 'sqlite:/here',
    });
  });

  it('answers the identity stored, not a new candidate, ever after', async () => {
    const source = await connect();
    await new DatabaseIdentity(source, 'L', () => 'first').identity();
    const later = new DatabaseIdentity(source, 'L', () => 'second');
    expect(await later.identity()).toEqual({ id: 'first', created: false, location: 'L' });
    expect(await later.identity()).toEqual({ id: 'first', created: false, location: 'L' });
    const rows = await source.query<{ n: number }[]>('SELECT count(*) AS n FROM scribe_database');
    expect(rows[0].n).toBe(1);
  });

  it('of instances asking at once, all get one id and exactly one created it', async () => {
    const first = await connect();
    const second = await connect();
    const answers = await Promise.all([
      new DatabaseIdentity(first, 'L', () => 'from-first').identity(),
      new DatabaseIdentity(second, 'L', () => 'from-second').identity(),
      new DatabaseIdentity(first, 'L', () => 'from-third').identity(),
    ]);
    const ids = new Set(answers.map((answer) => answer.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => answer.created)).toHaveLength(1);
  });

  it('makes random 16-hex-digit ids by default', async () => {
    const { id } = await new DatabaseIdentity(await connect(), 'L').identity();
    expect(id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('rejects while the database cannot answer', async () => {
    const source = await connect();
    await source.destroy();
    await expect(new DatabaseIdentity(source, 'L').identity()).rejects.toThrow();
  });

  it('names where a database is, without credentials', () => {
    expect(databaseLocation({ kind: 'sqlite', path: '/data/x.sqlite', synchronous: 'FULL' })).toBe(
      'sqlite:/data/x.sqlite',
    );
    expect(databaseLocation({ kind: 'sqlite', path: 'rel.sqlite', synchronous: 'FULL' })).toBe(
      `sqlite:${join(process.cwd(), 'rel.sqlite')}`,
    );
    expect(
      databaseLocation({
        kind: 'postgres',
        url: 'postgres://me:secret@db.internal:5433/scribe?options=-c%20search_path%3Ds1',
      }),
    ).toBe('postgres://me@db.internal:5433/scribe -c search_path=s1');
    expect(databaseLocation({ kind: 'postgres', url: 'postgres://db/scribe' })).toBe(
      'postgres://@db/scribe',
    );
  });
});
