import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { OwnerLock, UnusableLockFileError } from './owner-lock.js';

// Another instance, as the kernel sees it: a process that takes the lock as OwnerLock does,
// says LOCKED, and holds it until it is killed.
const HOLDER = `
const sqlite3 = require('sqlite3');
const database = new sqlite3.Database(process.argv[1], (error) => {
  if (error) throw error;
  database.exec('PRAGMA journal_mode = OFF; BEGIN EXCLUSIVE', (error) => {
    if (error) throw error;
    process.stdout.write('LOCKED\\n');
  });
});
setInterval(() => undefined, 1 << 30);
`;

// Another instance trying the lock once, as the kernel answers it to another process: prints
// BUSY while this one holds it (an in-process try cannot tell: SQLite tracks its own locks).
const TRIER = `
const sqlite3 = require('sqlite3');
const database = new sqlite3.Database(process.argv[1], sqlite3.OPEN_READWRITE, (error) => {
  if (error) throw error;
  database.configure('busyTimeout', 0);
  database.exec('PRAGMA journal_mode = OFF; BEGIN EXCLUSIVE', (error) => {
    process.stdout.write(error ? error.code : 'ACQUIRED');
    database.close();
  });
});
`;

/** What another process gets when it tries the lock on `path` once. */
async function tryInChild(path: string): Promise<string> {
  const child = spawn(process.execPath, ['-e', TRIER, path], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await once(child, 'exit');
  return output;
}

/** Starts a holder of the lock on `path`; resolves once it holds it. */
async function holdInChild(path: string): Promise<ChildProcess> {
  // -e resolves require() from the working directory: the repository, with its sqlite3.
  const child = spawn(process.execPath, ['-e', HOLDER, path], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the lock holder exited (${String(code)}) before it held the lock`);
  });
  await Promise.race([once(lines, 'line'), exited]);
  exited.catch(() => undefined);
  return child;
}

describe(OwnerLock.name, () => {
  let directory: string;
  const children: ChildProcess[] = [];
  const locks: OwnerLock[] = [];

  async function acquire(name = 'owner-abcdef01.lock'): Promise<OwnerLock | null> {
    const lock = await OwnerLock.tryAcquire(directory, name);
    if (lock) locks.push(lock);
    return lock;
  }

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-owner-lock-'));
  });

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }
    for (const lock of locks.splice(0)) await lock.release();
    await rm(directory, { recursive: true, force: true });
  });

  it('takes a free lock, creating its file with mode 0600', async () => {
    const lock = await acquire();

    expect(lock).not.toBeNull();
    expect(lock?.path).toBe(join(directory, 'owner-abcdef01.lock'));
    expect((await stat(join(directory, 'owner-abcdef01.lock'))).mode & 0o777).toBe(0o600);
  });

  it('makes the lock file mode 0600 exactly, whatever the umask', async () => {
    const before = process.umask(0o377);
    try {
      await acquire();
    } finally {
      process.umask(before);
    }

    expect((await stat(join(directory, 'owner-abcdef01.lock'))).mode & 0o777).toBe(0o600);
  });

  it('leaves an existing lock file its mode', async () => {
    await writeFile(join(directory, 'owner-abcdef01.lock'), '', { mode: 0o640 });

    expect(await acquire()).not.toBeNull();
    expect((await stat(join(directory, 'owner-abcdef01.lock'))).mode & 0o777).toBe(0o640);
  });

  it('leaves no rollback journal beside the lock file while it holds it', async () => {
    await acquire();

    expect(await readdir(directory)).toEqual(['owner-abcdef01.lock']);
  });

  it('is refused while it is held, and free again once released', async () => {
    const held = await acquire();

    expect(await acquire()).toBeNull();
    await held?.release();
    locks.splice(0);

    expect(await acquire()).not.toBeNull();
  });

  it('is held against other processes for as long as it is held', async () => {
    // A second descriptor opened and closed on the file by this process (a chmod, a stat
    // through a handle) drops every POSIX lock the process holds on it: then a second
    // instance would adopt the live journal. Checked from another process, as the kernel sees it.
    const held = await acquire();

    expect(await tryInChild(join(directory, 'owner-abcdef01.lock'))).toBe('SQLITE_BUSY');
    expect(await held?.intact()).toBe(true);
    expect(await tryInChild(join(directory, 'owner-abcdef01.lock'))).toBe('SQLITE_BUSY');

    await held?.release();
    locks.splice(0);
    expect(await tryInChild(join(directory, 'owner-abcdef01.lock'))).toBe('ACQUIRED');
  });

  it("is held against other processes once taken over from a dead owner's file", async () => {
    const path = join(directory, 'owner-abcdef01.lock');
    const holder = await holdInChild(path);
    holder.kill('SIGKILL');
    await once(holder, 'exit');

    expect(await acquire()).not.toBeNull();
    expect(await tryInChild(path)).toBe('SQLITE_BUSY');
  });

  it('holds one lock per file', async () => {
    await acquire('owner-aaaaaaaa.lock');

    expect(await acquire('owner-bbbbbbbb.lock')).not.toBeNull();
  });

  it('is refused while another process holds it, and free once that process is killed', async () => {
    const path = join(directory, 'owner-abcdef01.lock');
    const holder = await holdInChild(path);
    children.push(holder);

    expect(await acquire()).toBeNull();

    holder.kill('SIGKILL');
    await once(holder, 'exit');

    expect(await acquire()).not.toBeNull();
  });

  it('rejects a file that is not a lock, rather than calling its owner alive', async () => {
    await writeFile(join(directory, 'owner-abcdef01.lock'), 'x'.repeat(4096));

    await expect(acquire()).rejects.toMatchObject({ code: 'SQLITE_NOTADB' });
  });

  it('rejects a lock file that is a directory', async () => {
    await mkdir(join(directory, 'owner-abcdef01.lock'));

    await expect(acquire()).rejects.toMatchObject({ code: 'ENOTREGULAR' });
  });

  it('rejects when the directory is not there', async () => {
    await expect(OwnerLock.tryAcquire(join(directory, 'missing'), 'owner.lock')).rejects.toThrow();
  });

  describe('what is not a regular file at its name', () => {
    let outside: string;

    beforeEach(async () => {
      outside = await mkdtemp(join(tmpdir(), 'scribe-owner-lock-outside-'));
    });

    afterEach(() => rm(outside, { recursive: true, force: true }));

    it('refuses a symlink to an existing file, leaving its mode and bytes', async () => {
      const target = join(outside, 'target.db');
      await writeFile(target, '', { mode: 0o644 });
      await symlink(target, join(directory, 'owner-abcdef01.lock'));

      const error = await acquire().catch((cause) => cause);

      expect(error).toBeInstanceOf(UnusableLockFileError);
      expect(error).toMatchObject({
        code: 'ENOTREGULAR',
        message: `${join(directory, 'owner-abcdef01.lock')} is a symlink: not used as a lock file, left untouched`,
      });
      expect((await stat(target)).mode & 0o777).toBe(0o644);
      expect(await readFile(target, 'utf8')).toBe('');
      expect(await readdir(outside)).toEqual(['target.db']);
    });

    it('refuses a dangling symlink, creating nothing', async () => {
      await symlink(join(outside, 'never.db'), join(directory, 'owner-abcdef01.lock'));

      await expect(acquire()).rejects.toBeInstanceOf(UnusableLockFileError);
      expect(await readdir(outside)).toEqual([]);
    });

    it('refuses a directory', async () => {
      await mkdir(join(directory, 'owner-abcdef01.lock'));

      await expect(acquire()).rejects.toMatchObject({
        message: `${join(directory, 'owner-abcdef01.lock')} is not a regular file: not used as a lock file, left untouched`,
      });
    });
  });

  describe('intact', () => {
    it('holds while the file is the one locked', async () => {
      const lock = await acquire();

      expect(await lock?.intact()).toBe(true);
    });

    it('fails once the file is deleted, or another is put in its place', async () => {
      const lock = await acquire();
      const path = join(directory, 'owner-abcdef01.lock');
      await unlink(path);

      expect(await lock?.intact()).toBe(false);
      await writeFile(path, '');
      expect(await lock?.intact()).toBe(false);
    });

    it('fails once the directory is a file (ENOTDIR), not with the raw error', async () => {
      const lock = await acquire();
      await rm(directory, { recursive: true });
      await writeFile(directory, 'x');

      expect(await lock?.intact()).toBe(false);
    });
  });
});
