import { constants } from 'node:fs';
import { type FileHandle } from 'node:fs/promises';
import { type FileIdentity, type WritableFile } from './journal-files.js';

// Every open refuses a symlink (ELOOP), so that nothing outside the directory is ever touched;
// no open blocks on a FIFO (O_NONBLOCK does nothing to a regular file): a FIFO opened for
// writing would wait for a reader for ever, and every set-aside action after it in turn.
const { O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_WRONLY } = constants;
export const CREATE_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
export const APPEND_FLAGS = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK;
export const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
// No O_APPEND (Linux would put every write at the end) and no O_CREAT: only what is there.
export const OVERWRITE_FLAGS = O_WRONLY | O_NOFOLLOW | O_NONBLOCK;

/** A WritableFile over an open handle. */
export class NodeWritableFile implements WritableFile {
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

  async identity(): Promise<FileIdentity> {
    const { dev, ino } = await this.handle.stat();
    return { dev, ino };
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The handle's stat; rejects with ENOTREGULAR when it is not a regular file. */
export async function regularFile(handle: FileHandle, name: string) {
  const stats = await handle.stat();
  if (!stats.isFile()) {
    throw Object.assign(new Error(`ENOTREGULAR: not a regular file, open '${name}'`), {
      code: 'ENOTREGULAR',
    });
  }
  return stats;
}
