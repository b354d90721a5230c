import { mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseIdFile } from './database-id-file.js';

describe(DatabaseIdFile.name, () => {
  let directory: string;
  let sut: DatabaseIdFile;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-database-id-'));
    sut = new DatabaseIdFile(directory);
  });

  afterEach(() => rm(directory, { recursive: true, force: true }));

  const file = () => join(directory, 'database.id');

  it('reads null when there is no database.id', async () => {
    expect(await sut.read()).toBeNull();
  });

  const at = (id: string, location: string | null = 'sqlite:/data/scribe.sqlite') => ({
    id,
    location,
  });

  it('creates database.id, mode 0600, id and location on a line each, leaving no temp file', async () => {
    expect(await sut.create(at('0123456789abcdef'))).toEqual(at('0123456789abcdef'));
    expect(await readFile(file(), 'utf8')).toBe('0123456789abcdef\nsqlite:/data/scribe.sqlite\n');
    expect((await stat(file())).mode & 0o777).toBe(0o600);
    expect(await readdir(directory)).toEqual(['database.id']);
    expect(await sut.read()).toEqual(at('0123456789abcdef'));
  });

  it('never replaces a database.id in create: answers the one there', async () => {
    await sut.create(at('first'));
    expect(await sut.create(at('second', 'postgres://elsewhere'))).toEqual(at('first'));
    expect(await readFile(file(), 'utf8')).toBe('first\nsqlite:/data/scribe.sqlite\n');
    expect(await readdir(directory)).toEqual(['database.id']);
  });

  it('of claims made at once, exactly one lands and all answer it', async () => {
    const ids = ['a1', 'b2', 'c3', 'd4'];
    const answers = await Promise.all(ids.map((id) => sut.create(at(id))));
    expect(new Set(answers.map((answer) => answer.id)).size).toBe(1);
    expect(ids).toContain(answers[0].id);
    expect(await sut.read()).toEqual(answers[0]);
  });

  it('replaces a database.id, leaving no temp file', async () => {
    await sut.create(at('first'));
    expect(await sut.replace(at('second', 'postgres://x'))).toEqual(at('second', 'postgres://x'));
    expect(await readFile(file(), 'utf8')).toBe('second\npostgres://x\n');
    expect(await readdir(directory)).toEqual(['database.id']);
  });

  it('writes an unknown location as an empty line, read as null', async () => {
    await sut.create(at('first', null));
    expect(await readFile(file(), 'utf8')).toBe('first\n\n');
    expect(await sut.read()).toEqual(at('first', null));
  });

  it('reads an id alone, with surrounding white space', async () => {
    await writeFile(file(), '  abc-DEF_9 \r\n');
    expect(await sut.read()).toEqual(at('abc-DEF_9', null));
  });

  it.each([
    ['empty', ''],
    ['not an id', 'not an id'],
    ['too long', 'a'.repeat(65)],
  ])('rejects a database.id that is %s', async (_case, text) => {
    await writeFile(file(), text);
    await expect(sut.read()).rejects.toThrow('database.id holds no database id');
  });

  it('reads an id of 64 characters', async () => {
    await writeFile(file(), `${'a'.repeat(64)}\n  place  \n`);
    expect(await sut.read()).toEqual(at('a'.repeat(64), 'place'));
  });

  it('never follows a symlink', async () => {
    const outside = join(directory, 'outside');
    await writeFile(outside, 'abcdef\n');
    await symlink(outside, file());
    await expect(sut.read()).rejects.toMatchObject({ code: 'ELOOP' });
  });

  it('fails a write into a directory that is gone, leaving nothing', async () => {
    await rm(directory, { recursive: true });
    await expect(sut.create(at('x'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(sut.replace(at('x'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
