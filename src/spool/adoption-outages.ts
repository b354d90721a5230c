import { describeError, errorCode } from '../common/errors/describe-error.js';
import { type BlockedFiles } from './blocked-files.js';
import { type JournalFiles } from './journal-files.js';
import { OwnerLock } from './owner-lock.js';
import { ownerLockName, parseSegmentName } from './segment-names.js';

/**
 * The files of dead owners' journals that adoption cannot use now: an `owner-*.lock` that is
 * a directory, not SQLite or unreadable, and segments that do not answer a read (or are over
 * 2 GiB). Each is listed as blocked and tried again on the blocked list's backoff, so that one
 * holds back only its own owner or segment, and a fix is picked up without a restart.
 */
export class AdoptionOutages {
  // What this adoption listed as blocked (the drain lists segments of its own).
  private readonly mine = new Set<string>();

  constructor(
    private readonly files: JournalFiles,
    private readonly blocked: BlockedFiles,
  ) {}

  /** Whether one of them may be tried again now (it may have been fixed). */
  get retryDue(): boolean {
    return [...this.mine].some((source) => this.blocked.has(source) && this.blocked.due(source));
  }

  /** Whether `name` may be tried now. */
  due(name: string): boolean {
    return this.blocked.due(name);
  }

  /** The owner's lock, null while its owner lives, or while its lock file is unusable. */
  async tryLock(owner: string, segments: number): Promise<OwnerLock | null> {
    const name = ownerLockName(owner);
    if (!this.blocked.due(name)) return null;
    try {
      const lock = await OwnerLock.tryAcquire(this.files.directory, name);
      this.cleared(name);
      return lock;
    } catch (error) {
      this.mine.add(name);
      this.blocked.block(
        name,
        `lock file unusable: ${describeError(error)}; the ${segments} segment(s) of instance ${owner} wait`,
        null,
      );
      return null;
    }
  }

  /** The segment's bytes; null when it cannot be read now (then it is listed). */
  async read(name: string): Promise<Buffer | null> {
    try {
      const data = await this.files.read(name);
      this.cleared(name);
      return data;
    } catch (error) {
      this.mine.add(name);
      // Over 2 GiB (no segment this journal writes grows so big) it cannot be read whole.
      const reason =
        errorCode(error) === 'ERR_FS_FILE_TOO_LARGE'
          ? `segment too large to read (over 2 GiB): ${describeError(error)}`
          : `segment unreadable: ${describeError(error)}`;
      this.blocked.block(name, reason, null);
      return null;
    }
  }

  /**
   * What is gone from the directory (a segment removed by hand, every segment of an owner whose
   * lock file was unusable) holds nothing back: no longer listed. Returns such segments.
   */
  vanished(listed: readonly string[]): string[] {
    const names = new Set(listed);
    const owners = new Set(listed.map((name) => parseSegmentName(name)?.instanceId));
    const segments: string[] = [];
    for (const source of this.mine) {
      const segment = parseSegmentName(source);
      const gone = segment ? !names.has(source) : !owners.has(ownerOfLock(source));
      if (!gone) continue;
      this.cleared(source);
      if (segment) segments.push(source);
    }
    return segments;
  }

  private cleared(source: string): void {
    this.mine.delete(source);
    this.blocked.clear(source);
  }
}

/** The instance id in an `owner-<id>.lock` name. */
function ownerOfLock(name: string): string | undefined {
  return /^owner-(.+)\.lock$/.exec(name)?.[1];
}
