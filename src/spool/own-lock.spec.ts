import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeJournalFiles } from './node-journal-files.js';
import { OwnLock } from './own-lock.js';
import { SegmentNamer } from './segment-names.js';

// This instance's lock on a real directory: the calls that take, keep and let go of it come
// from the writer, /health and spoolStatus at once, and must not find each other holding it.
describe(OwnLock.name, () => {
  const name = 'owner-abcdef01.lock';
  let directory: string;
  let sut: OwnLock;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-own-lock-'));
    sut = new OwnLock(
      new NodeJournalFiles(directory),
      new SegmentNamer('abcdef01'),
      name,
      async () => undefined,
    );
  });

  afterEach(async () => {
    await sut.release(false);
    await rm(directory, { recursive: true, force: true });
  });

  it('takes the lock once when several ask for it at once', async () => {
    const results = await Promise.allSettled([sut.ensure(), sut.ensure(), sut.ensure()]);

    expect(results.map(({ status }) => status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(sut.held).toBe(true);
  });

  it('takes a vanished lock file again once when several keep it at once', async () => {
    await sut.ensure();
    await unlink(join(directory, name));

    const results = await Promise.allSettled([sut.keep(), sut.keep(), sut.ensure()]);

    expect(results.map(({ status }) => status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(sut.held).toBe(true);
    expect(await readdir(directory)).toEqual([name]);
  });

  it('keeps the file at release while something is owed, and removes none it does not hold', async () => {
    await sut.ensure();
    await sut.release(false);
    expect(sut.held).toBe(false);
    expect(await readdir(directory)).toEqual([name]);

    // Never taken here: a file of that name is not this instance's to remove.
    await sut.release(true);
    expect(await readdir(directory)).toEqual([name]);
  });

  it('is refused, naming the file, while another process holds it', async () => {
    await writeFile(join(directory, name), '');
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const sqlite3 = require('sqlite3');
         const database = new sqlite3.Database(process.argv[1], () =>
           database.exec('PRAGMA journal_mode = OFF; BEGIN EXCLUSIVE', () => process.stdout.write('LOCKED\\n')));
         setInterval(() => undefined, 1 << 30);`,
        join(directory, name),
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await once(holder.stdout, 'data');
      await expect(sut.ensure()).rejects.toThrow(`${name} is held by another process`);
      expect(sut.held).toBe(false);
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
  });

  it('removes the file at release when nothing is owed, after a keep in flight', async () => {
    await sut.ensure();
    await unlink(join(directory, name));

    await Promise.all([sut.keep(), sut.release(true)]);

    expect(sut.held).toBe(false);
    expect(await readdir(directory)).toEqual([]);
  });
});
