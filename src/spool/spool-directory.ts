import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { constants } from 'node:fs';
import { access, lstat } from 'node:fs/promises';
import { errorCode } from '../common/errors/describe-error.js';

/**
 * SPOOL_DIR is something the journal must not write through: a symlink (O_NOFOLLOW guards only
 * a path's last component, so a symlinked directory would send every segment elsewhere), a
 * file, or a directory this process cannot write. No retry mends it; the operator must.
 */
export class SpoolDirectoryError extends Error {
  override readonly name = 'SpoolDirectoryError';
  readonly code = ScribeErrorCode.SpoolDirUnusable;

  constructor(
    readonly directory: string,
    readonly found: string,
  ) {
    super(
      `SPOOL_DIR ${directory} is ${found}: nothing is journaled there until it is a directory this process can write`,
    );
  }
}

/**
 * lstat of `directory` itself, never what a symlink there points at; resolves with its identity
 * when it is a directory this process can write, rejects with SpoolDirectoryError when not
 * (and with ENOENT as is when it is gone: the caller may create it).
 */
export async function checkSpoolDirectory(
  directory: string,
): Promise<{ dev: number; ino: number }> {
  const stats = await lstat(directory);
  if (stats.isSymbolicLink()) throw new SpoolDirectoryError(directory, 'a symlink');
  if (!stats.isDirectory()) throw new SpoolDirectoryError(directory, 'not a directory');
  try {
    // Asked of the kernel, not worked out from the mode: ACLs, capabilities and read-only
    // mounts decide too.
    await access(directory, constants.W_OK | constants.X_OK);
  } catch (error) {
    const mode = (stats.mode & 0o7777).toString(8).padStart(4, '0');
    throw new SpoolDirectoryError(
      directory,
      `not writable by uid ${process.getuid?.() ?? 'unknown'} (owner uid ${stats.uid}, mode ${mode}: ${errorCode(error) ?? 'refused'})`,
    );
  }
  return { dev: stats.dev, ino: stats.ino };
}
