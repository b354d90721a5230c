import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { jest } from '@jest/globals';
import {
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeJournalFiles } from './node-journal-files.js';

// The one spec of the journal on a real file system: what the fake stands in for elsewhere.

/** The permission bits of a file or directory. */
async function modeOf(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** Runs `action` under `mask` (one that strips the owner's own bits shows every chmod). */
async function withUmask<T>(mask: number, action: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await action();
  } finally {
    process.umask(previous);
  }
}

const RESTRICTIVE_UMASK = 0o277;

describe(NodeJournalFiles.name, () => {
  let root: string;
  let directory: string;
  let sut: NodeJournalFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-journal-files-'));
    directory = join(root, 'spool');
    sut = new NodeJournalFiles(directory);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  describe('identity', () => {
    it('finds no file when SPOOL_DIR is a file now, as when the name is gone', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'journal-a.jsonl'), 'x');
      expect(await sut.identity('journal-a.jsonl')).not.toBeNull();
      await rm(directory, { recursive: true });
      expect(await sut.identity('journal-a.jsonl')).toBeNull();
      await writeFile(directory, 'x');

      expect(await sut.identity('journal-a.jsonl')).toBeNull();
    });
  });

  describe('modes', () => {
    it('creates the directory 0700 whatever the umask', async () => {
      await withUmask(RESTRICTIVE_UMASK, () => sut.ensureDirectory());

      expect(await modeOf(directory)).toBe(0o700);
    });

    it('leaves the mode of a directory it did not create alone', async () => {
      await mkdir(directory, { mode: 0o750 });

      await sut.ensureDirectory();

      expect(await modeOf(directory)).toBe(0o750);
    });

    it('creates files 0600 whatever the umask', async () => {
      await sut.ensureDirectory();

      const file = await withUmask(RESTRICTIVE_UMASK, () => sut.create('segment'));
      await file.close();

      expect(await modeOf(join(directory, 'segment'))).toBe(0o600);
    });

    it('creates a file for appending 0600 whatever the umask, and can append to it again', async () => {
      await sut.ensureDirectory();

      await withUmask(RESTRICTIVE_UMASK, async () => {
        const { file } = await sut.openForAppend('log');
        await file.write(Buffer.from('one\n'), 0);
        await file.close();
      });
      expect(await modeOf(join(directory, 'log'))).toBe(0o600);
      const { file, size } = await sut.openForAppend('log');
      await file.write(Buffer.from('two\n'), size);
      await file.close();

      expect(await modeOf(join(directory, 'log'))).toBe(0o600);
      expect(await readFile(join(directory, 'log'), 'utf8')).toBe('one\ntwo\n');
    });

    it('leaves the mode of a file to append to that it did not create alone', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'log'), 'kept\n', { mode: 0o640 });

      const { file } = await sut.openForAppend('log');
      await file.close();

      expect(await modeOf(join(directory, 'log'))).toBe(0o640);
    });

    it('creates the directory again, 0700, when it went missing', async () => {
      await sut.ensureDirectory();
      await rm(directory, { recursive: true });

      const file = await withUmask(RESTRICTIVE_UMASK, () => sut.create('segment'));
      await file.close();

      expect(await modeOf(directory)).toBe(0o700);
      expect(await modeOf(join(directory, 'segment'))).toBe(0o600);
    });
  });

  describe('create', () => {
    it('gives a file to write at chosen positions, sync, truncate and close', async () => {
      const file = await sut.create('segment');

      await file.write(Buffer.from('hello world\n'), 0);
      await file.write(Buffer.from('HELLO'), 6);
      await file.sync();
      await file.truncate(9);
      await file.close();

      expect(await readFile(join(directory, 'segment'), 'utf8')).toBe('hello HEL');
    });

    it('never opens a file that is there already', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'segment'), 'kept');

      await expect(sut.create('segment')).rejects.toMatchObject({ code: 'EEXIST' });
      expect(await readFile(join(directory, 'segment'), 'utf8')).toBe('kept');
    });

    it('fails when a regular file stands where the directory should be', async () => {
      await writeFile(directory, 'not a directory');

      await expect(sut.create('segment')).rejects.toMatchObject({ code: 'ENOTDIR' });
    });

    it('fails when the directory cannot be created', async () => {
      await writeFile(join(root, 'blocker'), '');
      sut = new NodeJournalFiles(join(root, 'blocker', 'spool'));

      await expect(sut.create('segment')).rejects.toMatchObject({ code: 'ENOTDIR' });
    });
  });

  describe('openForAppend', () => {
    it('creates a missing file, empty', async () => {
      await sut.ensureDirectory();

      const { file, size } = await sut.openForAppend('log');
      await file.close();

      expect(size).toBe(0);
      expect(await readFile(join(directory, 'log'), 'utf8')).toBe('');
    });

    it('answers the size of a file there already, and appends after it', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'log'), 'first\n');

      const { file, size } = await sut.openForAppend('log');
      await file.write(Buffer.from('second\n'), size);
      await file.close();

      expect(size).toBe(6);
      expect(await readFile(join(directory, 'log'), 'utf8')).toBe('first\nsecond\n');
    });
  });

  describe('reading', () => {
    beforeEach(async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'segment'), '0123456789');
    });

    it('reads a whole file', async () => {
      expect((await sut.read('segment')).toString()).toBe('0123456789');
    });

    it('reads ranges in the order asked, a range past the end cut short', async () => {
      const buffers = await sut.readRanges('segment', [
        { offset: 6, length: 2 },
        { offset: 0, length: 3 },
        { offset: 8, length: 5 },
        { offset: 20, length: 1 },
      ]);

      expect(buffers.map((buffer) => buffer.toString())).toEqual(['67', '012', '89', '']);
    });

    it('rejects for a file that is not there', async () => {
      await expect(sut.read('missing')).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(sut.readRanges('missing', [{ offset: 0, length: 1 }])).rejects.toMatchObject({
        code: 'ENOENT',
      });
    });
  });

  describe('list', () => {
    it('lists the regular files, not the directories', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'b'), '');
      await writeFile(join(directory, 'a'), '');
      await mkdir(join(directory, 'sub'));

      expect((await sut.list()).sort()).toEqual(['a', 'b']);
    });

    it('lists nothing when the directory is not there', async () => {
      expect(await sut.list()).toEqual([]);
    });

    it('rejects when the directory cannot be read', async () => {
      await writeFile(directory, 'not a directory');

      await expect(sut.list()).rejects.toMatchObject({ code: 'ENOTDIR' });
    });
  });

  describe('remove', () => {
    it('deletes a file, and takes one already gone for done', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'segment'), '');

      await sut.remove('segment');
      await sut.remove('segment');

      expect(await sut.list()).toEqual([]);
    });

    it('rejects what it cannot delete', async () => {
      await sut.ensureDirectory();
      await mkdir(join(directory, 'sub'));

      await expect(sut.remove('sub')).rejects.toMatchObject({
        code: expect.stringMatching(/^(EISDIR|EPERM)$/),
      });
    });
  });

  describe('ageMs', () => {
    it('answers the age of a file by its mtime', async () => {
      await sut.ensureDirectory();
      await writeFile(join(directory, 'old'), '');
      const hourAgo = new Date(Date.now() - 3_600_000);
      await utimes(join(directory, 'old'), hourAgo, hourAgo);

      const age = await sut.ageMs('old');

      expect(age).toBeGreaterThanOrEqual(3_600_000);
      expect(age).toBeLessThan(3_600_000 + 600_000);
    });

    it('answers undefined for a file that is gone', async () => {
      await sut.ensureDirectory();

      expect(await sut.ageMs('gone')).toBeUndefined();
    });

    it('rejects when the file cannot be looked at', async () => {
      await writeFile(directory, 'not a directory');

      await expect(sut.ageMs('segment')).rejects.toMatchObject({ code: 'ENOTDIR' });
    });
  });

  describe('checkWritable', () => {
    it('writes a temp file and deletes it again', async () => {
      await sut.ensureDirectory();

      await sut.checkWritable(0);

      expect(await sut.list()).toEqual([]);
    });

    it('creates the directory when it is missing', async () => {
      await sut.checkWritable(0);

      expect(await modeOf(directory)).toBe(0o700);
    });

    it('rejects when no file can be created there', async () => {
      await writeFile(directory, 'not a directory');

      await expect(sut.checkWritable(0)).rejects.toMatchObject({
        code: ScribeErrorCode.SpoolDirUnusable,
        found: 'not a directory',
      });
    });
  });

  describe('a directory that cannot be synced', () => {
    /** Fails the next fsync of any file handle: create() syncs only the directory. */
    async function failNextSync(code: string): Promise<void> {
      const probe = await open(root, 'r');
      const prototype = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
      await probe.close();
      jest
        .spyOn(prototype, 'sync')
        .mockRejectedValueOnce(Object.assign(new Error(`${code}: fsync`), { code }));
    }

    afterEach(() => {
      jest.restoreAllMocks();
    });

    it.each(['EINVAL', 'ENOTSUP', 'EISDIR'])(
      'takes a file system that cannot sync a directory (%s) as it is',
      async (code) => {
        await sut.ensureDirectory();
        await failNextSync(code);

        await (await sut.create('segment')).close();

        expect(await sut.list()).toEqual(['segment']);
      },
    );

    it('fails the create when the directory sync fails otherwise, closing the new file', async () => {
      const openDescriptors = async () => (await readdir('/proc/self/fd')).length;
      await sut.ensureDirectory();
      const before = await openDescriptors();
      await failNextSync('EIO');

      await expect(sut.create('segment')).rejects.toMatchObject({ code: 'EIO' });

      expect(await openDescriptors()).toBe(before);
    });
  });

  describe('faults of the disk', () => {
    /** The prototype of node:fs/promises' FileHandle, to stand in for the kernel on it. */
    async function fileHandlePrototype(): Promise<Record<string, (...args: never[]) => unknown>> {
      const probe = await open(root, 'r');
      await probe.close();
      return Object.getPrototypeOf(probe) as Record<string, (...args: never[]) => unknown>;
    }

    afterEach(() => {
      jest.restoreAllMocks();
    });

    it('writes all of a buffer the kernel takes in pieces', async () => {
      const prototype = await fileHandlePrototype();
      const write = prototype.write as (...args: unknown[]) => Promise<unknown>;
      let calls = 0;
      // The first write takes 3 bytes only, as one does when the disk is nearly full.
      jest.spyOn(prototype, 'write').mockImplementation(function (
        this: unknown,
        ...args: unknown[]
      ) {
        const [buffer, offset, length, position] = args as [Buffer, number, number, number];
        calls += 1;
        return write.call(this, buffer, offset, calls === 1 ? 3 : length, position);
      });
      const file = await sut.create('segment');

      await file.write(Buffer.from('0123456789'), 5);
      await file.close();

      expect(calls).toBe(2);
      expect(await readFile(join(directory, 'segment'))).toEqual(
        Buffer.concat([Buffer.alloc(5), Buffer.from('0123456789')]),
      );
    });

    it('finds a disk with no room for data unwritable, though a file can still be created', async () => {
      await sut.ensureDirectory();
      const prototype = await fileHandlePrototype();
      jest
        .spyOn(prototype, 'writeFile')
        .mockImplementation((data: string) =>
          data.length > 0
            ? Promise.reject(Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' }))
            : Promise.resolve(),
        );

      await expect(sut.checkWritable(0)).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(await sut.list()).toEqual([]);
    });
  });

  it('closes every file it opens', async () => {
    // Counted on Linux, where /proc lists this process's open descriptors.
    const openDescriptors = async () => (await readdir('/proc/self/fd')).length;
    await sut.ensureDirectory();
    await writeFile(join(directory, 'segment'), '0123456789');
    const before = await openDescriptors();

    await (await sut.create('new')).close();
    await (await sut.openForAppend('log')).file.close();
    await sut.read('segment');
    await sut.readRanges('segment', [{ offset: 0, length: 2 }]);
    await sut.checkWritable(0);
    await sut.list();

    expect(await openDescriptors()).toBe(before);
  });

  describe('names', () => {
    it.each(['../outside', 'sub/file', '..', '.', '/etc/passwd', 'a/../b'])(
      'refuses %s for every operation',
      async (name) => {
        await sut.ensureDirectory();
        const refused = `not a spool file name: ${name}`;

        await expect(sut.create(name)).rejects.toThrow(refused);
        await expect(sut.openForAppend(name)).rejects.toThrow(refused);
        await expect(sut.read(name)).rejects.toThrow(refused);
        await expect(sut.readRanges(name, [])).rejects.toThrow(refused);
        await expect(sut.remove(name)).rejects.toThrow(refused);
        await expect(sut.ageMs(name)).rejects.toThrow(refused);
        expect(await readdir(root)).toEqual(['spool']);
        expect(await readdir(directory)).toEqual([]);
      },
    );
  });
});
