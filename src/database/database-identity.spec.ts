import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options.js';
import { DatabaseIdentity } from './database-identity.js';

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
    return source.initialize();
  }

  it('gives a database without identity the candidate, and says it created it', async () => {
    const sut = new DatabaseIdentity(await connect(), () => 'candidate-1');
    expect(await sut.identity()).toEqual({ id: 'candidate-1', created: true });
  });

  it('answers the identity stored, not a new candidate, ever after', async () => {
    const source = await connect();
    await new DatabaseIdentity(source, () => 'first').identity();
    const later = new DatabaseIdentity(source, () => 'second');
    expect(await later.identity()).toEqual({ id: 'first', created: false });
    expect(await later.identity()).toEqual({ id: 'first', created: false });
    const rows = await source.query<{ n: number }[]>('SELECT count(*) AS n FROM scribe_database');
    expect(rows[0].n).toBe(1);
  });

  it('of instances asking at once, all get one id and exactly one created it', async () => {
    const first = await connect();
    const second = await connect();
    const answers = await Promise.all([
      new DatabaseIdentity(first, () => 'from-first').identity(),
      new DatabaseIdentity(second, () => 'from-second').identity(),
      new DatabaseIdentity(first, () => 'from-third').identity(),
    ]);
    const ids = new Set(answers.map((answer) => answer.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => answer.created)).toHaveLength(1);
  });

  it('makes random 16-hex-digit ids by default', async () => {
    const { id } = await new DatabaseIdentity(await connect()).identity();
    expect(id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('rejects while the database cannot answer', async () => {
    const source = await connect();
    await source.destroy();
    await expect(new DatabaseIdentity(source).identity()).rejects.toThrow();
  });
});
