import { randomBytes } from 'node:crypto';
import {
  chmod,
  mkdir,
  open,
  readFile,
  readdir,
  stat,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import { errorCode } from '../common/errors/describe-error.js';
import { TEMP_PREFIX } from './segment-names.js';

const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;

/** A file the journal writes at positions it chooses, and syncs. */
export interface WritableFile {
  /** Writes all of `data` at `position`; rejects (perhaps after writing part of it) on failure. */
  write(data: Buffer, position: number): Promise<void>;
  /** fdatasync: the bytes written so far, and the size, are on disk. */
  sync(): Promise<void>;
  truncate(size: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The spool directory as the journal uses it. One seam for every file operation, so that specs
 * can make a write tear half way, a sync fail or the disk fill up, at will.
 */
export interface JournalFiles {
  readonly directory: string;
  /** mkdir -p with mode 0700. */
  ensureDirectory(): Promise<void>;
  /** Names of the regular files in the directory (none when it does not exist). */
  list(): Promise<string[]>;
  /** Creates a new empty file (mode 0600) and makes its directory entry durable. */
  create(name: string): Promise<WritableFile>;
  /** Opens a file for appending, creating it when missing; resolves with it and its size. */
  openForAppend(name: string): Promise<{ file: WritableFile; size: number }>;
  read(name: string): Promise<Buffer>;
  /** The bytes of each range, in the order asked. */
  readRanges(
    name: string,
    ranges: readonly { offset: number; length: number }[],
  ): Promise<Buffer[]>;
  /** Deletes a file; one already gone is not an error. */
  remove(name: string): Promise<void>;
  /** Age in ms of a file by its mtime, or undefined when it is gone. */
  ageMs(name: string): Promise<number | undefined>;
  /** Rejects when a file cannot be created and written in the directory right now. */
  checkWritable(): Promise<void>;
}

/** JournalFiles on the real file system. */
export class NodeJournalFiles implements JournalFiles {
  constructor(readonly directory: string) {}

  async ensureDirectory(): Promise<void> {
    const created = await mkdir(this.directory, { recursive: true, mode: DIRECTORY_MODE });
    // mkdir's mode is cut by the umask; only a directory we created is ours to chmod.
    if (created !== undefined) await chmod(this.directory, DIRECTORY_MODE);
  }

  async list(): Promise<string[]> {
    try {
      const entries = await readdir(this.directory, { withFileTypes: true });
      return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
  }

  async create(name: string): Promise<WritableFile> {
    const handle = await this.openNew(this.path(name));
    try {
      // open() honours the umask; the mode must be exact.
      await handle.chmod(FILE_MODE);
      // The new name is only durable once the directory entry is.
      await this.syncDirectory();
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return new NodeWritableFile(handle);
  }

  async openForAppend(name: string): Promise<{ file: WritableFile; size: number }> {
    const handle = await open(this.path(name), 'a', FILE_MODE);
    try {
      const { size } = await handle.stat();
      if (size === 0) {
        // New (or empty): as in create(), the umask must not decide its mode.
        await handle.chmod(FILE_MODE);
        await this.syncDirectory();
      }
      return { file: new NodeWritableFile(handle), size };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  async read(name: string): Promise<Buffer> {
    // Async, so that a refused name rejects like every other failure rather than throwing.
    return await readFile(this.path(name));
  }

  async readRanges(
    name: string,
    ranges: readonly { offset: number; length: number }[],
  ): Promise<Buffer[]> {
    const handle = await open(this.path(name), 'r');
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
      return Date.now() - (await stat(this.path(name))).mtimeMs;
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  async checkWritable(): Promise<void> {
    const name = `${TEMP_PREFIX}check-${randomBytes(6).toString('hex')}`;
    const handle = await this.openNew(this.path(name));
    try {
      await handle.writeFile('ok', 'utf8');
    } finally {
      await handle.close();
      await this.remove(name);
    }
  }

  /** Creates a file exclusively, creating the directory first when it went missing. */
  private async openNew(path: string): Promise<FileHandle> {
    try {
      return await open(path, 'wx', FILE_MODE);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
    // Throws (ENOTDIR / EEXIST) when a regular file stands in the way.
    await this.ensureDirectory();
    return await open(path, 'wx', FILE_MODE);
  }

  private async syncDirectory(): Promise<void> {
    const handle = await open(this.directory, 'r');
    try {
      await handle.sync();
    } catch (error) {
      // Some file systems cannot fsync a directory; nothing more can be done there.
      if (!['EINVAL', 'ENOTSUP', 'EISDIR'].includes(errorCode(error) ?? '')) throw error;
    } finally {
      await handle.close();
    }
  }

  private path(name: string): string {
    // Names come from the journal itself, but none may ever reach outside the directory.
    if (basename(name) !== name || name === '.' || name === '..') {
      throw new Error(`not a spool file name: ${name}`);
    }
    return join(this.directory, name);
  }
}

class NodeWritableFile implements WritableFile {
  constructor(private readonly handle: FileHandle) {}

  async write(data: Buffer, position: number): Promise<void> {
    let written = 0;
    // A regular file takes the whole buffer unless the disk fills; then the next call fails.
    while (written < data.length) {
      const { bytesWritten } = await this.handle.write(
        data,
        written,
        data.length - written,
        position + written,
      );
      written += bytesWritten;
    }
  }

  sync(): Promise<void> {
    return this.handle.datasync();
  }

  truncate(size: number): Promise<void> {
    return this.handle.truncate(size);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
