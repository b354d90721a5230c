import { deferred, type Deferred } from '../../common/testing/deferred.js';
import {
  type FileIdentity,
  type IrregularEntry,
  type JournalFiles,
  type WritableFile,
} from '../journal-files.js';

/** The operations a spec can fail, hold or wait for. */
export type FileOperation =
  | 'ensureDirectory'
  | 'checkDirectory'
  | 'list'
  | 'create'
  | 'openForAppend'
  | 'write'
  | 'sync'
  | 'truncate'
  | 'close'
  | 'read'
  | 'readRanges'
  | 'remove'
  | 'ageMs'
  | 'identity'
  | 'checkWritable';

const MESSAGES: Record<string, string> = {
  ENOSPC: 'no space left on device',
  EIO: 'i/o error',
  EACCES: 'permission denied',
  EROFS: 'read-only file system',
  ENOENT: 'no such file or directory',
  EBADF: 'bad file descriptor',
};

/** An error as node:fs rejects with: `EIO: i/o error, fsync`, with its code and syscall. */
export function fsError(code: string, syscall = 'write'): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${MESSAGES[code] ?? 'failed'}, ${syscall}`), {
    code,
    syscall,
  });
}

interface Fault {
  error: unknown;
  /** Only a call on this file; any file when undefined. */
  name?: string;
  /** For a write: bytes that reach the file before it fails. */
  tearAfter?: number;
}

/** The bytes of one file; open handles keep it after its name is removed, as an inode. */
interface Inode {
  data: Buffer;
  ino: number;
}

let nextIno = 1;

function newInode(data: Buffer = Buffer.alloc(0)): Inode {
  return { data, ino: nextIno++ };
}

/**
 * JournalFiles in memory, for specs that must tear a write half way, fill the disk or fail an
 * fsync at a chosen moment, without a temp directory.
 *
 * - `failNext(operation, error, name?)` fails the next call of that operation (on that file).
 * - `tearNextWrite(bytes, error)` lets the next write put `bytes` bytes on "disk", then fail.
 * - `holdNext(operation)` makes the next call wait until the test resolves the gate.
 * - `reached(operation, count)` is a barrier: it resolves once that many calls have begun.
 * - `log` has one line per call that did something: `write <name>@<offset>+<length>`, ...
 *
 * A file opened by `openForAppend` appends wherever the write says it goes, as Linux does with
 * O_APPEND; a written file that was removed keeps its bytes for its open handles only.
 */
export class FakeJournalFiles implements JournalFiles {
  readonly log: string[] = [];
  private readonly inodes = new Map<string, Inode>();
  private readonly faults = new Map<FileOperation, Fault[]>();
  private readonly holds = new Map<FileOperation, Deferred[]>();
  private readonly counts = new Map<FileOperation, number>();
  private waiters: { operation: FileOperation; count: number; gate: Deferred }[] = [];
  // The directory's own inode: what checkDirectory() tells.
  private directoryIno = nextIno++;

  constructor(readonly directory = '/spool') {}

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
  replaceDirectory(): void {
    this.directoryIno = nextIno++;
  }

  /** Calls of `operation` so far. */
  calls(operation: FileOperation): number {
    return this.counts.get(operation) ?? 0;
  }

  failNext(
    operation: FileOperation,
    error: unknown = fsError('EIO', operation),
    name?: string,
  ): void {
    this.faultsOf(operation).push({ error, name });
  }

  tearNextWrite(bytes: number, error: unknown = fsError('ENOSPC', 'write')): void {
    this.faultsOf('write').push({ error, tearAfter: bytes });
  }

  holdNext(operation: FileOperation): Deferred {
    const gate = deferred();
    const holds = this.holds.get(operation) ?? [];
    holds.push(gate);
    this.holds.set(operation, holds);
    return gate;
  }

  /** Resolves once `count` calls of `operation` have begun (a barrier, not a sleep). */
  reached(operation: FileOperation, count: number): Promise<void> {
    const gate = deferred();
    this.waiters.push({ operation, count, gate });
    this.wake();
    return gate.promise;
  }

  async ensureDirectory(): Promise<FileIdentity> {
    await this.begin('ensureDirectory');
    return { dev: 1, ino: this.directoryIno };
  }

  async checkDirectory(): Promise<FileIdentity> {
    await this.begin('checkDirectory');
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

  /** Every call goes through here: counted, held when asked, failed when asked (for FakeWritableFile). */
  async begin(operation: FileOperation, name?: string): Promise<Fault | undefined> {
    this.counts.set(operation, this.calls(operation) + 1);
    this.wake();
    const hold = this.holds.get(operation)?.shift();
    if (hold) await hold.promise;
    // Always one turn of the event loop's microtasks, as a real file system call takes.
    await Promise.resolve();
    const faults = this.faultsOf(operation);
    const index = faults.findIndex((fault) => fault.name === undefined || fault.name === name);
    if (index < 0) return undefined;
    const [fault] = faults.splice(index, 1);
    if (fault.tearAfter === undefined) throw fault.error;
    return fault;
  }

  private existing(name: string): Inode {
    const inode = this.inodes.get(name);
    if (!inode) throw fsError('ENOENT', 'open');
    return inode;
  }

  private faultsOf(operation: FileOperation): Fault[] {
    const faults = this.faults.get(operation) ?? [];
    this.faults.set(operation, faults);
    return faults;
  }

  private wake(): void {
    const ready = this.waiters.filter((waiter) => this.calls(waiter.operation) >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.gate.resolve();
  }
}

class FakeWritableFile implements WritableFile {
  private closed = false;

  constructor(
    private readonly files: FakeJournalFiles,
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
