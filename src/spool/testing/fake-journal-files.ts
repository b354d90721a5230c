import {
  type FileIdentity,
  type IrregularEntry,
  type JournalFiles,
  type WritableFile,
} from '../journal-files.js';
import { FakeWritableFile, type Inode, newInode } from './fake-writable-file.js';
import { FileFaults, fsError } from './file-faults.js';

/**
 * JournalFiles in memory, for specs that must tear a write half way, fill the disk or fail an
 * fsync at a chosen moment, without a temp directory.
 *
 * - the faults, holds and barriers of FileFaults (`failNext`, `tearNextWrite`, `holdNext`,
 *   `reached`), on every operation.
 * - `log` has one line per call that did something: `write <name>@<offset>+<length>`, ...
 *
 * A file opened by `openForAppend` appends wherever the write says it goes, as Linux does with
 * O_APPEND; a written file that was removed keeps its bytes for its open handles only.
 */
export class FakeJournalFiles extends FileFaults implements JournalFiles {
  readonly log: string[] = [];
  private readonly inodes = new Map<string, Inode>();
  // The directory's own inode: what checkDirectory() tells.
  private directoryIno = newInode().ino;

  constructor(readonly directory = '/spool') {
    super();
  }

  /** Puts a file there, as if an earlier run or another instance wrote it. */
  put(name: string, data: Buffer | string): void {
    this.inodes.set(name, newInode(Buffer.from(data)));
  }

  has(name: string): boolean {
    return this.inodes.has(name);
  }

  /** The bytes of a file (throws when there is none). */
  bytes(name: string): Buffer {
    const inode = this.inodes.get(name);
    if (!inode) throw new Error(`no file ${name}`);
    return inode.data;
  }

  text(name: string): string {
    return this.bytes(name).toString('utf8');
  }

  /** The names of the files, sorted. */
  names(): string[] {
    return [...this.inodes.keys()].sort();
  }

  /** Entries that are not regular files, as `irregular()` lists them. */
  readonly irregularEntries: IrregularEntry[] = [];
  /** The recordBytes of each checkWritable call. */
  readonly checkedBytes: number[] = [];

  /** Another file now stands at `name` (an operator replaced it): open handles keep the old. */
  replace(name: string, data: Buffer | string = ''): void {
    this.inodes.set(name, newInode(Buffer.from(data)));
  }

  /** Another directory now stands at the spool's path (its files stay, as after a mv and back). */
  /** Takes `name` away (an mv of the directory aside); `restore` puts the same file back. */
  takeAway(name: string): Inode {
    const inode = this.existing(name);
    this.inodes.delete(name);
    return inode;
  }

  restore(name: string, inode: Inode): void {
    this.inodes.set(name, inode);
  }

  replaceDirectory(): void {
    this.directoryIno = newInode().ino;
  }

  async ensureDirectory(): Promise<FileIdentity> {
    await this.begin('ensureDirectory');
    return { dev: 1, ino: this.directoryIno };
  }

  async checkDirectory(): Promise<FileIdentity> {
    await this.begin('checkDirectory');
    return { dev: 1, ino: this.directoryIno };
  }

  async directoryIdentity(): Promise<FileIdentity | null> {
    await this.begin('directoryIdentity');
    return { dev: 1, ino: this.directoryIno };
  }

  async list(): Promise<string[]> {
    await this.begin('list');
    return [...this.inodes.keys()];
  }

  async irregular(): Promise<IrregularEntry[]> {
    await this.begin('list');
    return [...this.irregularEntries];
  }

  async identity(name: string): Promise<FileIdentity | null> {
    await this.begin('identity', name);
    const inode = this.inodes.get(name);
    return inode ? { dev: 1, ino: inode.ino } : null;
  }

  async create(name: string): Promise<WritableFile> {
    await this.begin('create', name);
    if (this.inodes.has(name)) throw fsError('EEXIST', 'open');
    const inode = newInode();
    this.inodes.set(name, inode);
    this.log.push(`create ${name}`);
    return new FakeWritableFile(this, name, inode, false);
  }

  async openForAppend(name: string): Promise<{ file: WritableFile; size: number }> {
    await this.begin('openForAppend', name);
    const inode = this.inodes.get(name) ?? newInode();
    this.inodes.set(name, inode);
    this.log.push(`openForAppend ${name}`);
    return { file: new FakeWritableFile(this, name, inode, true), size: inode.data.length };
  }

  async openForOverwrite(name: string): Promise<WritableFile> {
    await this.begin('openForOverwrite', name);
    const inode = this.existing(name);
    this.log.push(`openForOverwrite ${name}`);
    return new FakeWritableFile(this, name, inode, false);
  }

  async read(name: string): Promise<Buffer> {
    await this.begin('read', name);
    this.log.push(`read ${name}`);
    return Buffer.from(this.existing(name).data);
  }

  async readRanges(
    name: string,
    ranges: readonly { offset: number; length: number }[],
  ): Promise<Buffer[]> {
    await this.begin('readRanges', name);
    this.log.push(
      `readRanges ${name} ${ranges.map((range) => `${range.offset}+${range.length}`).join(',')}`,
    );
    const data = this.existing(name).data;
    return ranges.map((range) =>
      Buffer.from(data.subarray(range.offset, range.offset + range.length)),
    );
  }

  async remove(name: string): Promise<void> {
    await this.begin('remove', name);
    this.log.push(`remove ${name}`);
    this.inodes.delete(name);
  }

  async ageMs(name: string): Promise<number | undefined> {
    await this.begin('ageMs', name);
    return this.inodes.has(name) ? 0 : undefined;
  }

  async checkWritable(recordBytes: number): Promise<void> {
    this.checkedBytes.push(recordBytes);
    await this.begin('checkWritable');
  }

  private existing(name: string): Inode {
    const inode = this.inodes.get(name);
    if (!inode) throw fsError('ENOENT', 'open');
    return inode;
  }
}
