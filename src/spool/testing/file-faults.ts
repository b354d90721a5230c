import { deferred, type Deferred } from '../../common/testing/deferred.js';

// The fault injection behind FakeJournalFiles and its open files: every call of theirs goes
// through begin(), which counts it, holds it and fails it as the spec asked. Kept apart from the
// in-memory file table so that each reads as one job.

/** The operations a spec can fail, hold or wait for. */
export type FileOperation =
  | 'ensureDirectory'
  | 'checkDirectory'
  | 'directoryIdentity'
  | 'list'
  | 'create'
  | 'openForAppend'
  | 'openForOverwrite'
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

export interface Fault {
  error: unknown;
  /** Only a call on this file; any file when undefined. */
  name?: string;
  /** For a write: bytes that reach the file before it fails. */
  tearAfter?: number;
}

/**
 * Faults, holds and barriers for the operations of a fake file system.
 *
 * - `failNext(operation, error, name?)` fails the next call of that operation (on that file).
 * - `tearNextWrite(bytes, error)` lets the next write put `bytes` bytes on "disk", then fail.
 * - `holdNext(operation)` makes the next call wait until the test resolves the gate.
 * - `reached(operation, count)` is a barrier: it resolves once that many calls have begun.
 */
export class FileFaults {
  private readonly faults = new Map<FileOperation, Fault[]>();
  private readonly holds = new Map<FileOperation, Deferred[]>();
  private readonly counts = new Map<FileOperation, number>();
  private waiters: { operation: FileOperation; count: number; gate: Deferred }[] = [];

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

  /** Every call of a fake goes through here: counted, held when asked, failed when asked. */
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
