import { type FileIdentity, type JournalFiles } from './journal-files.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { errorCode } from '../common/errors/describe-error.js';
import { type JournalIndex } from './journal-index.js';

/** A segment of this writer's that vanished or was replaced, and what that did to its records. */
export interface LostSegment {
  name: string;
  what: 'deleted' | 'replaced';
  /** Records memory still held: memory only (BUFFERED) until journaled again. */
  orphaned: number;
  /** Records only the disk held: gone with the file. */
  lost: number;
}

/** What the writer tells its owner (logs, the owner lock) as it works. */
export interface WriterEvents {
  /** Before a new segment is begun: its directory must be ours (the owner lock is there). */
  beforeNewSegment(): Promise<void>;
  segmentLost(lost: LostSegment): void;
  /** `count` orphaned records are on disk again, synced in `segment`. */
  rejournaled(count: number, segment: string): void;
  /** `segment`, given up with `lost` records only it held, is the same file at its name again. */
  segmentFound(segment: string, lost: number): void;
}

export const NO_EVENTS: WriterEvents = {
  beforeNewSegment: () => Promise.resolve(),
  segmentLost: () => {},
  rejournaled: () => {},
  segmentFound: () => {},
};

// Given-up segments looked for again at every batch (one lstat each while any is missing).
const MAX_MISSING = 16;

export function sameFile(left: FileIdentity | null, right: FileIdentity): boolean {
  return left !== null && left.dev === right.dev && left.ino === right.ino;
}

/** Segments of this writer vanished (deleted, or replaced by another file): not written. */
export class SegmentLostError extends Error {
  override readonly name = 'SegmentLostError';
  readonly code = 'ESEGMENTLOST';

  constructor(readonly segments: readonly LostSegment[]) {
    super(
      `journal segment ${segments.map((segment) => `${segment.name} was ${segment.what}`).join(', ')} under the running instance; a new segment begins with the next write`,
    );
  }
}

/**
 * For JournalWriter: the files of its segments that still owe records, and the checks that
 * tell when one vanished or SPOOL_DIR was swapped under them.
 */
export class SegmentWatch {
  private readonly identities = new Map<string, FileIdentity>();
  // Given-up segments whose records only the disk held, by name: a directory moved aside and
  // back brings the very file back, and its records were never lost. Bounded, as every batch
  // looks for them; the oldest is forgotten first (its records stay counted lost).
  private readonly missing = new Map<string, { identity: FileIdentity; lost: number }>();

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
  ) {}

  /** `name` was begun as the file `identity` is. */
  watch(name: string, identity: FileIdentity): void {
    this.identities.set(name, identity);
  }

  /** `name` owes nothing any more (or is gone as told): no longer checked. */
  forget(name: string): void {
    this.identities.delete(name);
  }

  /**
   * Whether `name` still finds the file `identity` is (one lstat). A SPOOL_DIR this process may
   * no longer search (chmod 000) hides the segment: rejects with what the directory's own check
   * says (SpoolDirectoryError, SPOOL_DIR_UNUSABLE), not the segment's raw EACCES.
   */
  async intact(name: string, identity: FileIdentity): Promise<boolean> {
    let now: FileIdentity | null;
    try {
      now = await this.files.identity(name);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EACCES' || code === 'EPERM') await this.files.checkDirectory();
      throw error;
    }
    return sameFile(now, identity);
  }

  /**
   * The segment's name resolves to its file, but is SPOOL_DIR still the directory it was begun
   * in? A symlink to that same directory put in its place (mv it aside, ln -s) passes the
   * segment's check, as lstat follows every component but the last. Refused as such a
   * directory is at a new segment; the segment stays active and owed, so that the original put
   * back writes on in it, and a new directory in its place is found to have lost it.
   */
  async checkDirectory(directory: FileIdentity): Promise<void> {
    if (sameFile(await this.files.directoryIdentity(), directory)) return;
    // Says what stands there now (a symlink, not writable, ...) when it is refused outright.
    await this.files.checkDirectory();
    throw new SpoolDirectoryError(this.files.directory, 'another directory than before');
  }

  /**
   * `active` vanished: it, and every other watched segment whose name no longer finds its
   * file, is given up, its held records orphaned (JournalIndex.dropSegment).
   */
  async giveUp(active: string): Promise<LostSegment[]> {
    const lost: LostSegment[] = [];
    for (const [name, identity] of [...this.identities]) {
      const now = await this.files.identity(name).catch(() => null);
      if (name !== active && sameFile(now, identity)) continue;
      this.identities.delete(name);
      const dropped = this.index.dropSegment(name);
      if (dropped.lost > 0) this.remember(name, identity, dropped.lost);
      lost.push({ name, what: now ? 'replaced' : 'deleted', ...dropped });
    }
    return lost;
  }

  /**
   * Given-up segments whose name finds the very file again (dev and inode): no longer missing,
   * their records taken off JournalIndex.lostRecords. Their records are not in this run's
   * index (memory's were journaled again; the next start adopts the file and stores each once).
   */
  async found(): Promise<{ name: string; lost: number }[]> {
    const found: { name: string; lost: number }[] = [];
    for (const [name, { identity, lost }] of [...this.missing]) {
      if (!sameFile(await this.files.identity(name).catch(() => null), identity)) continue;
      this.missing.delete(name);
      this.index.foundAgain(lost);
      found.push({ name, lost });
    }
    return found;
  }

  private remember(name: string, identity: FileIdentity, lost: number): void {
    this.missing.set(name, { identity, lost });
    if (this.missing.size > MAX_MISSING) this.missing.delete(this.missing.keys().next().value!);
  }
}
