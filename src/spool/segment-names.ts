/**
 * File names in the spool directory. Segments sort by name in the order they were begun, across
 * restarts and instances: `journal-<epoch ms, 15 digits>-<sequence, 6 digits>-<instance>.jsonl`.
 * Each instance holds `owner-<instance>.lock` while it lives (see OwnerLock).
 */
const SEGMENT = /^journal-(\d{15})-(\d{6})-([0-9a-f]{8})\.jsonl$/;
const OWNER_LOCK = /^owner-([0-9a-f]{8})\.lock$/;

const MAX_SEQUENCE = 999_999;

export const SET_ASIDE_LOG = 'set-aside.jsonl';
/** The identity of the database the spool belongs to (see DatabaseBinding). */
export const DATABASE_ID_FILE = 'database.id';
export const TEMP_PREFIX = '.tmp-';

export interface SegmentName {
  name: string;
  ms: number;
  sequence: number;
  instanceId: string;
}

export function formatSegmentName(ms: number, sequence: number, instanceId: string): string {
  return `journal-${String(ms).padStart(15, '0')}-${String(sequence).padStart(6, '0')}-${instanceId}.jsonl`;
}

export function parseSegmentName(name: string): SegmentName | null {
  const match = SEGMENT.exec(name);
  return match
    ? { name, ms: Number(match[1]), sequence: Number(match[2]), instanceId: match[3] }
    : null;
}

export function ownerLockName(instanceId: string): string {
  return `owner-${instanceId}.lock`;
}

/** Whether Scribe wrote this file (a segment, an owner lock or its SQLite journal, the set-aside log, the database id, a temp file). */
export function isOwnFile(name: string): boolean {
  return (
    SEGMENT.test(name) ||
    OWNER_LOCK.test(name) ||
    OWNER_LOCK.test(name.replace(/-journal$/, '')) ||
    name === SET_ASIDE_LOG ||
    name === DATABASE_ID_FILE ||
    name.startsWith(TEMP_PREFIX)
  );
}

/**
 * Names for the segments of one instance, in order: never below a segment already in the
 * directory (the clock may have gone back since it was written), unique within a millisecond.
 */
export class SegmentNamer {
  private lastMs = 0;
  private sequence = 0;

  constructor(
    private readonly instanceId: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Names after `existing` (the names found in the directory) sort first. */
  floor(existing: readonly string[]): void {
    for (const name of existing) {
      const parsed = parseSegmentName(name);
      if (parsed && parsed.ms >= this.lastMs) {
        this.sequence =
          parsed.ms > this.lastMs ? parsed.sequence : Math.max(this.sequence, parsed.sequence);
        this.lastMs = parsed.ms;
      }
    }
  }

  next(): string {
    const now = this.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
    } else if (++this.sequence > MAX_SEQUENCE) {
      this.lastMs += 1;
      this.sequence = 0;
    }
    return formatSegmentName(this.lastMs, this.sequence, this.instanceId);
  }
}
