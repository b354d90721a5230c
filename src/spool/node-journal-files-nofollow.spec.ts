import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { NodeJournalFiles } from './node-journal-files.js';

// NodeJournalFiles never reaches outside its directory: symlinks and directories where files
// belong are refused (and listed), and what it opens is checked to be the file it named.
describe('NodeJournalFiles and what is not a regular file', () => {
  let root: string;
  let directory: string;
  let outside: string;
  let sut: NodeJournalFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-nofollow-'));
    directory = join(root, 'spool');
    outside = join(root, 'outside.txt');
    await mkdir(directory);
    await writeFile(outside, 'outside\n', { mode: 0o644 });
    sut = new NodeJournalFiles(directory);
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  async function outsideState() {
    return { mode: (await stat(outside)).mode & 0o777, content: await readFile(outside, 'utf8') };
  }

  it('refuses to read, read ranges of or append to a symlink, leaving its target as it was', async () => {
    await symlink(outside, join(directory, 'link'));

    await expect(sut.read('link')).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(sut.readRanges('link', [{ offset: 0, length: 2 }])).rejects.toMatchObject({
      code: 'ELOOP',
    });
    await expect(sut.openForAppend('link')).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(sut.create('link')).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await outsideState()).toEqual({ mode: 0o644, content: 'outside\n' });
  });

  it('refuses a dangling symlink without creating its target', async () => {
    const target = join(root, 'never-created');
    await symlink(target, join(directory, 'dangling'));

    await expect(sut.openForAppend('dangling')).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a directory or a FIFO where a file belongs, without blocking', async () => {
    await mkdir(join(directory, 'dir'));
    execFileSync('mkfifo', [join(directory, 'fifo')]);

    await expect(sut.read('dir')).rejects.toMatchObject({ code: 'ENOTREGULAR' });
    await expect(sut.read('fifo')).rejects.toMatchObject({ code: 'ENOTREGULAR' });
    await expect(sut.readRanges('fifo', [{ offset: 0, length: 1 }])).rejects.toMatchObject({
      code: 'ENOTREGULAR',
    });
    await expect(sut.openForAppend('dir')).rejects.toMatchObject({ code: 'EISDIR' });
    // No reader: refused at open (ENXIO), where a blocking open would wait for one for ever.
    await expect(sut.openForAppend('fifo')).rejects.toMatchObject({ code: 'ENXIO' });
    // With a reader, it opens, and is refused as no regular file.
    const reader = await open(join(directory, 'fifo'), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      await expect(sut.openForAppend('fifo')).rejects.toMatchObject({ code: 'ENOTREGULAR' });
    } finally {
      await reader.close();
    }
  });

  it('lists what is not a regular file by kind, and only regular files as files', async () => {
    await writeFile(join(directory, 'file'), 'x');
    await symlink(outside, join(directory, 'link'));
    await mkdir(join(directory, 'dir'));
    execFileSync('mkfifo', [join(directory, 'fifo')]);

    expect(await sut.list()).toEqual(['file']);
    expect(
      (await sut.irregular()).sort((left, right) => (left.name < right.name ? -1 : 1)),
    ).toEqual([
      { name: 'dir', kind: 'directory' },
      { name: 'fifo', kind: 'other' },
      { name: 'link', kind: 'symlink' },
    ]);
  });

  it('lists nothing irregular when the directory does not exist', async () => {
    await rm(directory, { recursive: true });

    expect(await sut.irregular()).toEqual([]);
  });

  it("tells a file's identity by its name and by its handle, and null once it is gone", async () => {
    const file = await sut.create('segment');
    const byHandle = await file.identity();
    const { dev, ino } = await stat(join(directory, 'segment'));

    expect(byHandle).toEqual({ dev, ino });
    expect(await sut.identity('segment')).toEqual({ dev, ino });
    await rm(join(directory, 'segment'));
    expect(await sut.identity('segment')).toBeNull();
    await writeFile(join(directory, 'segment'), 'another');
    expect((await sut.identity('segment'))?.ino).not.toBe(ino);
    expect(await file.identity()).toEqual(byHandle);
    await file.close();
  });

  it('identity of a symlink is the link itself, not its target', async () => {
    await symlink(outside, join(directory, 'link'));

    expect((await sut.identity('link'))?.ino).not.toBe((await stat(outside)).ino);
  });

  describe('checkWritable', () => {
    it('passes when the room for a record is there', async () => {
      await expect(sut.checkWritable(1024)).resolves.toBeUndefined();
    });

    it('rejects with ENOSPC when the file system has less room than a record needs', async () => {
      const error = await sut.checkWritable(Number.MAX_SAFE_INTEGER).catch((cause) => cause);

      expect(error).toMatchObject({ code: 'ENOSPC' });
      expect((error as Error).message).toMatch(
        new RegExp(
          `^ENOSPC: \\d+ bytes free, a journal record may need \\d+, statfs '${directory}'$`,
        ),
      );
    });
  });
});
