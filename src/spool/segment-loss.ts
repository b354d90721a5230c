import { type FileIdentity } from './journal-files.js';

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
}

export const NO_EVENTS: WriterEvents = {
  beforeNewSegment: () => Promise.resolve(),
  segmentLost: () => {},
  rejournaled: () => {},
};

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
