/** A file of the journal that owes records but cannot be used now, with why. */
export interface BlockedFile {
  /** The file: a segment, an owner's lock file, or the set-aside log. */
  source: string;
  reason: string;
  /** Records it holds back, when known (null: not read yet, e.g. a dead owner's journal). */
  records: number | null;
  /** Epoch ms when it was first found blocked. */
  since: number;
}

/** What the registry tells the outside: once when a file is found blocked, once when it is not. */
export interface BlockedFileEvents {
  blocked(file: BlockedFile): void;
  recovered(file: BlockedFile, downMs: number): void;
}

interface Outage extends BlockedFile {
  failures: number;
  nextAttemptAt: number;
}

/**
 * The journal's files that cannot be read or written right now (a mode changed, a file gone,
 * EIO, a lock file that is not SQLite, a full disk under the set-aside log). Such a file is an
 * outage, not corruption: what it holds stays owed and is tried again later, after a wait
 * that doubles from `baseDelayMs` up to `maxDelayMs` with every failed attempt, so that a
 * file that stays broken costs a read now and then, not one per drain.
 */
export class BlockedFiles {
  private readonly outages = new Map<string, Outage>();

  constructor(
    private readonly events: BlockedFileEvents,
    private readonly baseDelayMs: number,
    private readonly maxDelayMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Another failed attempt on `source`: listed (told once), and the next one waits longer. */
  block(source: string, reason: string, records: number | null): void {
    const now = this.clock();
    const known = this.outages.get(source);
    const failures = (known?.failures ?? 0) + 1;
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures - 1, 30));
    const outage: Outage = {
      source,
      reason,
      records,
      since: known?.since ?? now,
      failures,
      nextAttemptAt: now + delay,
    };
    this.outages.set(source, outage);
    if (!known) this.events.blocked(this.view(outage));
  }

  /** `source` worked again: no longer listed (told once, when it was). */
  clear(source: string): void {
    const known = this.outages.get(source);
    if (!known) return;
    this.outages.delete(source);
    this.events.recovered(this.view(known), Math.max(0, this.clock() - known.since));
  }

  /** Whether `source` may be tried now: not blocked, or its wait is over. */
  due(source: string): boolean {
    const known = this.outages.get(source);
    return !known || this.clock() >= known.nextAttemptAt;
  }

  has(source: string): boolean {
    return this.outages.has(source);
  }

  /** The reason `source` is blocked, or undefined. */
  reasonOf(source: string): string | undefined {
    return this.outages.get(source)?.reason;
  }

  /** Every blocked file, oldest outage first. */
  list(): BlockedFile[] {
    return [...this.outages.values()]
      .map((outage) => this.view(outage))
      .sort((left, right) => left.since - right.since || (left.source < right.source ? -1 : 1));
  }

  get size(): number {
    return this.outages.size;
  }

  private view({ source, reason, records, since }: Outage): BlockedFile {
    return { source, reason, records, since };
  }
}
