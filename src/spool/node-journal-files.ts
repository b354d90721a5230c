import { randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  open,
  readdir,
  statfs,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import { errorCode } from '../common/errors/describe-error.js';
import {
  APPEND_FLAGS,
  CREATE_FLAGS,
  NodeWritableFile,
  OVERWRITE_FLAGS,
  READ_FLAGS,
  regularFile,
} from './node-file-handle.js';
import { TEMP_PREFIX } from './segment-names.js';
import { checkSpoolDirectory } from './spool-directory.js';
import {
  type FileIdentity,
  type IrregularEntry,
  type JournalFiles,
  type WritableFile,
} from './journal-files.js';

const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;

/** JournalFiles on the real file system. */
export class NodeJournalFiles implements JournalFiles {
  constructor(readonly directory: string) {}

  async ensureDirectory(): Promise<FileIdentity> {
    try {
      return await this.checkDirectory();
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
    const created = await mkdir(this.directory, { recursive: true, mode: DIRECTORY_MODE });
    // mkdir's mode is cut by the umask; only a directory we created is ours to chmod.
    if (created !== undefined) await chmod(this.directory, DIRECTORY_MODE);
    return await this.checkDirectory();
  }

  checkDirectory(): Promise<FileIdentity> {
    return checkSpoolDirectory(this.directory);
  }

  async directoryIdentity(): Promise<FileIdentity | null> {
    try {
      const { dev, ino } = await lstat(this.directory);
      return { dev, ino };
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
  }

  async list(): Promise<string[]> {
    return (await this.entries()).filter((entry) => entry.isFile()).map((entry) => entry.name);
  }

  async irregular(): Promise<IrregularEntry[]> {
    return (await this.entries())
      .filter((entry) => !entry.isFile())
      .map((entry) => ({
        name: entry.name,
        kind: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'directory' : 'other',
      }));
  }

  async identity(name: string): Promise<FileIdentity | null> {
    try {
      const { dev, ino } = await lstat(this.path(name));
      return { dev, ino };
    } catch (error) {
      // ENOTDIR: SPOOL_DIR is a file now, so the name finds no file either, as when SPOOL_DIR
      // is a symlink elsewhere; the segment is given up and the directory refused as for that.
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
      throw error;
    }
  }

  async create(name: string): Promise<WritableFile> {
    const handle = await this.openNew(this.path(name));
    try {
      // open() honours the umask; the mode must be exact.
      await handle.chmod(FILE_MODE);
      // The new name is only durable once the directory entry is.
      await syncDirectory(this.directory);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return new NodeWritableFile(handle);
  }

  async openForAppend(name: string): Promise<{ file: WritableFile; size: number }> {
    const handle = await open(this.path(name), APPEND_FLAGS, FILE_MODE);
    try {
      const { size } = await regularFile(handle, name);
      if (size === 0) {
        // New (or empty): as in create(), the umask must not decide its mode.
        await handle.chmod(FILE_MODE);
        await syncDirectory(this.directory);
      }
      return { file: new NodeWritableFile(handle), size };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  async openForOverwrite(name: string): Promise<WritableFile> {
    const handle = await open(this.path(name), OVERWRITE_FLAGS);
    try {
      await regularFile(handle, name);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return new NodeWritableFile(handle);
  }

  async read(name: string): Promise<Buffer> {
    const handle = await this.openForRead(name);
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  async readRanges(
    name: string,
    ranges: readonly { offset: number; length: number }[],
  ): Promise<Buffer[]> {
    const handle = await this.openForRead(name);
    try {
      const buffers: Buffer[] = [];
      for (const range of ranges) {
        const buffer = Buffer.alloc(range.length);
        const { bytesRead } = await handle.read(buffer, 0, range.length, range.offset);
        buffers.push(buffer.subarray(0, bytesRead));
      }
      return buffers;
    } finally {
      await handle.close();
    }
  }

  async remove(name: string): Promise<void> {
    try {
      await unlink(this.path(name));
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  }

  async ageMs(name: string): Promise<number | undefined> {
    try {
      return Date.now() - (await lstat(this.path(name))).mtimeMs;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  async checkWritable(recordBytes: number): Promise<void> {
    const name = `${TEMP_PREFIX}check-${randomBytes(6).toString('hex')}`;
    // Creates the directory when it went missing, and refuses one that is a symlink: the
    // file below would be written through it.
    await this.ensureDirectory();
    // Proves a file can be written there.
    const handle = await this.openNew(this.path(name));
    try {
      await handle.writeFile('ok', 'utf8');
    } finally {
      await handle.close();
      await this.remove(name);
    }
    // Two bytes fit long after a message no longer does: the room a whole record needs must
    // be there too (a block more, for the block the line may begin in the middle of).
    const { bavail, bsize } = await statfs(this.directory);
    const free = bavail * bsize;
    if (free < recordBytes + bsize) {
      throw Object.assign(
        new Error(
          `ENOSPC: ${free} bytes free, a journal record may need ${recordBytes + bsize}, statfs '${this.directory}'`,
        ),
        { code: 'ENOSPC' },
      );
    }
  }

  private async entries() {
    try {
      return await readdir(this.directory, { withFileTypes: true });
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
  }

  /** Opens an existing regular file to read; a symlink, directory or FIFO is refused. */
  private async openForRead(name: string): Promise<FileHandle> {
    // Async, so that a refused name rejects like every other failure rather than throwing.
    const handle = await open(this.path(name), READ_FLAGS);
    try {
      await regularFile(handle, name);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return handle;
  }

  /** Creates a file exclusively, creating the directory first when it went missing. */
  private async openNew(path: string): Promise<FileHandle> {
    try {
      return await open(path, CREATE_FLAGS, FILE_MODE);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
    // Throws (SpoolDirectoryError) when a file or a symlink stands in the way.
    await this.ensureDirectory();
    return await open(path, CREATE_FLAGS, FILE_MODE);
  }

  private path(name: string): string {
    // Names come from the journal itself, but none may ever reach outside the directory.
    if (basename(name) !== name || name === '.' || name === '..') {
      throw new Error(`not a spool file name: ${name}`);
    }
    return join(this.directory, name);
  }
}

/** Syncs `directory`, so that the names just made or renamed in it are durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some file systems cannot fsync a directory; nothing more can be done there.
    if (!['EINVAL', 'ENOTSUP', 'EISDIR'].includes(errorCode(error) ?? '')) throw error;
  } finally {
    await handle.close();
  }
}
