import { type FileIdentity, type WritableFile } from '../journal-files.js';
import { type FileFaults, fsError } from './file-faults.js';

/** The bytes of one file; open handles keep it after its name is removed, as an inode. */
export interface Inode {
  data: Buffer;
  ino: number;
}

let nextIno = 1;

export function newInode(data: Buffer = Buffer.alloc(0)): Inode {
  return { data, ino: nextIno++ };
}

/** What an open file needs of its file system: its faults, and the log it writes to. */
type OwningFiles = Pick<FileFaults, 'begin'> & { readonly log: string[] };

/** A file FakeJournalFiles opened: its writes, syncs and truncations land on the shared inode. */
export class FakeWritableFile implements WritableFile {
  private closed = false;

  constructor(
    private readonly files: OwningFiles,
    private readonly name: string,
    private readonly inode: Inode,
    private readonly appending: boolean,
  ) {}

  async write(data: Buffer, position: number): Promise<void> {
    const fault = await this.files.begin('write', this.name);
    this.ensureOpen();
    const at = this.appending ? this.inode.data.length : position;
    const landed = fault?.tearAfter === undefined ? data : data.subarray(0, fault.tearAfter);
    const size = Math.max(this.inode.data.length, at + landed.length);
    const next = Buffer.alloc(size);
    this.inode.data.copy(next);
    landed.copy(next, at);
    this.inode.data = next;
    this.files.log.push(`write ${this.name}@${at}+${landed.length}`);
    if (fault) throw fault.error;
  }

  async sync(): Promise<void> {
    await this.files.begin('sync', this.name);
    this.ensureOpen();
    this.files.log.push(`sync ${this.name}`);
  }

  async truncate(size: number): Promise<void> {
    await this.files.begin('truncate', this.name);
    this.ensureOpen();
    const next = Buffer.alloc(size);
    this.inode.data.copy(next, 0, 0, Math.min(size, this.inode.data.length));
    this.inode.data = next;
    this.files.log.push(`truncate ${this.name} ${size}`);
  }

  identity(): Promise<FileIdentity> {
    this.ensureOpen();
    return Promise.resolve({ dev: 1, ino: this.inode.ino });
  }

  async close(): Promise<void> {
    this.ensureOpen();
    this.closed = true;
    await this.files.begin('close', this.name);
    this.files.log.push(`close ${this.name}`);
  }

  private ensureOpen(): void {
    if (this.closed) throw fsError('EBADF', 'write');
  }
}
