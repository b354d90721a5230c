import { execFile } from 'node:child_process';
import { mkdtemp, rm, rmdir, statfs, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A disk that really fills: a tmpfs of a few MiB mounted for one test, and a filler file grown
// with dd until the kernel answers ENOSPC. Mounting needs root, which CI has; where it is
// missing the suites fail with the reason instead of skipping what they exist to prove.

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

function command(file: string, args: string[]): Promise<CommandResult> {
  return new Promise((resolveRun) => {
    execFile(file, args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolveRun({ code, stdout, stderr: stderr || (error?.message ?? '') });
    });
  });
}

export interface Tmpfs {
  /** The mount point. */
  readonly path: string;
  /** Bytes still free on the file system (statfs). */
  freeBytes(): Promise<number>;
  /** Unmounts (lazily when something still holds a file open) and removes the mount point. */
  unmount(): Promise<void>;
}

/** Mounts a tmpfs of `sizeBytes` on a new directory; fails loudly when that is not possible. */
export async function mountTmpfs(sizeBytes: number): Promise<Tmpfs> {
  const path = await mkdtemp(join(tmpdir(), 'scribe-tmpfs-'));
  const mounted = await command('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', path]);
  if (mounted.code !== 0) {
    await rm(path, { recursive: true, force: true });
    throw new Error(
      `cannot mount a tmpfs at ${path} (mount exited ${mounted.code}: ${mounted.stderr.trim()}); ` +
        `the disk-full suites need root, as CI has, and never skip`,
    );
  }
  let unmounted = false;
  return {
    path,
    async freeBytes() {
      const stats = await statfs(path);
      return stats.bavail * stats.bsize;
    },
    async unmount() {
      if (unmounted) return;
      let result = await command('umount', [path]);
      // A process the test could not stop still holds a file: detach now, freed when it goes.
      if (result.code !== 0) result = await command('umount', ['-l', path]);
      if (result.code !== 0) {
        throw new Error(`umount ${path} failed: ${result.stderr.trim()}`);
      }
      unmounted = true;
      await rmdir(path);
    },
  };
}

/**
 * A file that takes the free space of a file system, grown with dd as an operator's stray
 * download or a runaway log would; deleting it gives the space back.
 */
export class Filler {
  constructor(readonly path: string) {}

  /**
   * Appends up to `bytes` (all the free space when omitted); resolves `full` when dd hit ENOSPC
   * (the disk is full now), `grown` when it wrote all it was asked.
   */
  async grow(bytes?: number): Promise<'grown' | 'full'> {
    const blockBytes = 4096;
    const args = [
      'if=/dev/zero',
      `of=${this.path}`,
      `bs=${blockBytes}`,
      'oflag=append',
      'conv=notrunc',
      'status=none',
    ];
    if (bytes !== undefined) args.push(`count=${Math.max(1, Math.ceil(bytes / blockBytes))}`);
    const result = await command('dd', args);
    if (result.code === 0) return bytes === undefined ? 'full' : 'grown';
    if (/No space left on device/.test(result.stderr)) return 'full';
    throw new Error(`dd into ${this.path} failed (exit ${result.code}): ${result.stderr.trim()}`);
  }

  /** Deletes the file: its space is free again. */
  async remove(): Promise<void> {
    await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
