import { describeError } from '../common/errors/describe-error.js';
import { type Failpoints } from '../common/failpoints.js';
import { type WritableFile } from './journal-files.js';

/**
 * Writes all of `data` at `start` and syncs it (fdatasync): one group-commit batch on its way
 * to disk. Rejects with SyncFailedError when the sync itself failed, as the segment can then no
 * longer be trusted; with the write's own error when the write failed.
 */
export async function writeSynced(
  file: WritableFile,
  data: Buffer,
  start: number,
  failpoints: Failpoints,
): Promise<void> {
  if (failpoints.isArmed('journal.torn-write')) {
    // A crash test's kill lands half way through the batch: a torn tail on disk.
    const half = Math.floor(data.length / 2);
    await file.write(data.subarray(0, half), start);
    failpoints.reach('journal.torn-write');
    await file.write(data.subarray(half), start + half);
  } else {
    await file.write(data, start);
  }
  try {
    await file.sync();
  } catch (error) {
    throw new SyncFailedError(error);
  }
}

/** The data reached the file but fdatasync failed: the segment can no longer be trusted. */
export class SyncFailedError extends Error {
  override readonly name = 'SyncFailedError';
  readonly code: unknown;

  constructor(cause: unknown) {
    super(`fdatasync failed: ${describeError(cause)}`, { cause });
    this.code = (cause as { code?: unknown } | null)?.code;
  }
}
