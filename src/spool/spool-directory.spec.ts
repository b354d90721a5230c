import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeJournalFiles } from './node-journal-files.js';
import { SpoolDirectoryError, checkSpoolDirectory } from './spool-directory.js';

// SPOOL_DIR itself, as the journal checks it before it writes there: lstat, never followed.
describe('checkSpoolDirectory', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-spool-dir-'));
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  it("resolves with a writable directory's own identity", async () => {
    const directory = join(root, 'spool');
    await mkdir(directory);
    const { dev, ino } = await stat(directory);

    await expect(checkSpoolDirectory(directory)).resolves.toEqual({ dev, ino });
  });

  it("tells SPOOL_DIR's own inode, a symlink's rather than its target's, and null when gone", async () => {
    const target = join(root, 'original');
    await mkdir(target);
    const spool = join(root, 'spool');
    const files = new NodeJournalFiles(spool);
    await expect(files.directoryIdentity()).resolves.toBeNull();

    await symlink(target, spool);
    const link = await lstat(spool);

    await expect(files.directoryIdentity()).resolves.toEqual({ dev: link.dev, ino: link.ino });
    expect(link.ino).not.toBe((await stat(target)).ino);
  });

  it('refuses a symlink to a writable directory, naming what it found', async () => {
    const target = join(root, 'elsewhere');
    await mkdir(target);
    await symlink(target, join(root, 'spool'));

    const error = await checkSpoolDirectory(join(root, 'spool')).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(SpoolDirectoryError);
    expect(error).toMatchObject({
      name: 'SpoolDirectoryError',
      code: ScribeErrorCode.SpoolDirUnusable,
      directory: join(root, 'spool'),
      found: 'a symlink',
      message: `SPOOL_DIR ${join(root, 'spool')} is a symlink: nothing is journaled there until it is a directory this process can write`,
    });
  });

  it('refuses a file', async () => {
    await writeFile(join(root, 'spool'), '');

    await expect(checkSpoolDirectory(join(root, 'spool'))).rejects.toMatchObject({
      found: 'not a directory',
    });
  });

  it('rejects with ENOENT as is when the directory is gone', async () => {
    await expect(checkSpoolDirectory(join(root, 'spool'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('refuses a directory the kernel will not let this process write, with its owner and mode', async () => {
    // Root writes anywhere the mode says no; a read-only mount it cannot.
    const directory = join(root, 'spool');
    await mkdir(directory);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k,mode=0751', 'tmpfs', directory]);
    try {
      await expect(checkSpoolDirectory(directory)).rejects.toMatchObject({
        found: `not writable by uid ${process.getuid?.()} (owner uid 0, mode 0751: EROFS)`,
      });
    } finally {
      execFileSync('umount', [directory]);
    }
  });
});

describe('NodeJournalFiles.ensureDirectory', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-spool-dir-'));
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  it('creates a missing directory and resolves with its identity', async () => {
    const directory = join(root, 'a', 'spool');

    const identity = await new NodeJournalFiles(directory).ensureDirectory();

    const { dev, ino, mode } = await stat(directory);
    expect({ identity, mode: mode & 0o777 }).toEqual({ identity: { dev, ino }, mode: 0o700 });
  });

  it('neither follows nor creates through a symlink, dangling or not', async () => {
    await symlink(join(root, 'never-created'), join(root, 'spool'));

    await expect(
      new NodeJournalFiles(join(root, 'spool')).ensureDirectory(),
    ).rejects.toBeInstanceOf(SpoolDirectoryError);
    await expect(stat(join(root, 'never-created'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('checkWritable writes nothing through a symlinked directory', async () => {
    const target = join(root, 'elsewhere');
    await mkdir(target);
    await symlink(target, join(root, 'spool'));

    await expect(new NodeJournalFiles(join(root, 'spool')).checkWritable(1)).rejects.toMatchObject({
      found: 'a symlink',
    });
  });
});
