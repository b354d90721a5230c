import { Logger } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { type JournalFiles } from './journal-files.js';
import { OwnerLock } from './owner-lock.js';
import { type SegmentNamer } from './segment-names.js';

/**
 * This instance's `owner-*.lock` in the spool directory: while it is held, no other instance
 * adopts (replays, deletes) the segments this one writes. Taken on first use, so that a spool
 * unusable at start (missing, full, read-only) is tried again by every later append.
 */
export class OwnLock {
  private readonly logger = new Logger('Journal');
  private lock: OwnerLock | null = null;
  // One of ensure, keep and release at a time: two taking the lock at once would find each
  // other holding it ("held by another process"), and a keep racing another would let go of
  // the lock the other has just taken.
  private readonly turn = new Mutex();

  constructor(
    private readonly files: JournalFiles,
    private readonly namer: SegmentNamer,
    private readonly name: string,
    // Told of the directory's entries once it exists (symlinks and the like are warned about).
    private readonly listed: () => Promise<void>,
  ) {}

  get held(): boolean {
    return this.lock !== null;
  }

  /** The directory exists and the lock is held here: segments may be written. */
  ensure(): Promise<void> {
    return this.turn.runExclusive(() => this.ensureNow());
  }

  private async ensureNow(): Promise<void> {
    if (this.lock) return;
    await this.files.ensureDirectory();
    this.namer.floor(await this.files.list());
    await this.listed();
    this.lock = await OwnerLock.tryAcquire(this.files.directory, this.name);
    if (!this.lock) throw new Error(`${this.name} is held by another process`);
  }

  /**
   * Before a new segment: the lock must still be the file in the directory. A removed
   * directory (or lock file) took it; without it another instance would adopt the new segment
   * while this one writes to it, so it is taken again first.
   */
  keep(): Promise<void> {
    return this.turn.runExclusive(() => this.keepNow());
  }

  private async keepNow(): Promise<void> {
    if (!this.lock || (await this.lock.intact())) return;
    // A refused SPOOL_DIR (a symlink, another owner's) took the lock with it, and its own ERROR
    // says so; a lock line before it would send the operator after the wrong file. The lock
    // is taken again, and that said, once the directory is one to take it in.
    await this.files.ensureDirectory();
    this.logger.error(
      `Journal: ${this.files.directory}/${this.name} vanished or was replaced; taking it again`,
    );
    await this.lock.release();
    this.lock = null;
    this.lock = await OwnerLock.tryAcquire(this.files.directory, this.name);
    if (!this.lock) throw new Error(`${this.name} is held by another process`);
  }

  /** At shutdown: the file goes too when nothing is owed (nobody need wait for this owner). */
  release(owesNothing: boolean): Promise<void> {
    return this.turn.runExclusive(() => this.releaseNow(owesNothing));
  }

  private async releaseNow(owesNothing: boolean): Promise<void> {
    if (this.lock && owesNothing) await this.files.remove(this.name).catch(() => undefined);
    await this.lock?.release();
    this.lock = null;
  }
}
