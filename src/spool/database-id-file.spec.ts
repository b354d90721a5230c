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

  it('creates database.id, mode 0600, one line, leaving no temp file', async () => {
    expect(await sut.create('0123456789abcdef')).toBe('0123456789abcdef');
    expect(await readFile(file(), 'utf8')).toBe('0123456789abcdef\n');
    expect((await stat(file())).mode & 0o777).toBe(0o600);
    expect(await readdir(directory)).toEqual(['database.id']);
    expect(await sut.read()).toBe('0123456789abcdef');
  });

  it('never replaces a database.id in create: answers the one there', async () => {
    await sut.create('first');
    expect(await sut.create('second')).toBe('first');
    expect(await readFile(file(), 'utf8')).toBe('first\n');
    expect(await readdir(directory)).toEqual(['database.id']);
  });

  it('of claims made at once, exactly one lands and all answer it', async () => {
    const answers = await Promise.all(['a1', 'b2', 'c3', 'd4'].map((id) => sut.create(id)));
    expect(new Set(answers).size).toBe(1);
    expect(['a1', 'b2', 'c3', 'd4']).toContain(answers[0]);
    expect(await sut.read()).toBe(answers[0]);
  });

  it('replaces a database.id, leaving no temp file', async () => {
    await sut.create('first');
    expect(await sut.replace('second')).toBe('second');
    expect(await readFile(file(), 'utf8')).toBe('second\n');
    expect(await readdir(directory)).toEqual(['database.id']);
  });

  it('reads an id with surrounding white space', async () => {
    await writeFile(file(), '  abc-DEF_9 \r\n');
    expect(await sut.read()).toBe('abc-DEF_9');
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
    await writeFile(file(), 'a'.repeat(64));
    expect(await sut.read()).toBe('a'.repeat(64));
  });

  it('never follows a symlink', async () => {
    const outside = join(directory, 'outside');
    await writeFile(outside, 'abcdef\n');
    await symlink(outside, file());
    await expect(sut.read()).rejects.toMatchObject({ code: 'ELOOP' });
  });

  it('fails a write into a directory that is gone, leaving nothing', async () => {
    await rm(directory, { recursive: true });
    await expect(sut.create('x')).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(sut.replace('x')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
