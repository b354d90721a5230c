import { Logger } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { classifyDatabaseError } from '../database/database-errors.js';

/** How a write may go to the database now. */
export type Admission =
  /** The database is believed healthy: write. */
  | 'write'
  /** It is failing, and this write is the one probe allowed to try it. */
  | 'probe'
  /** It is failing and something else probes it: do not wait out a timeout, journal at once. */
  | 'skip';

export interface HealthLog {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

// From this many consecutive failed writes of a session on, failures log at ERROR.
const LOUD_FAILURE_COUNT = 3;
// How often a quiet outage (no appends, only the background retry) is reported again.
const OUTAGE_REPORT_INTERVAL_MS = 60_000;

function isPowerOfTen(value: number): boolean {
  let rest = value;
  while (rest >= 10 && rest % 10 === 0) rest /= 10;
  return rest === 1;
}

export interface DatabaseHealthStatus {
  databaseWritable: boolean;
  lastDatabaseError: string | null;
  lastDatabaseErrorAt: number | null;
  consecutiveFailures: ReadonlyMap<string, number>;
}

/**
 * Whether the database takes writes, as the write path last saw it: healthy until a write
 * fails, then failing until a write or probe commits again. While it fails only one write at
 * a time goes to it (with the background retry on, only the retry's probe), so that appends
 * are journaled at once instead of each waiting out a database timeout under its session's
 * lock. An outage gets louder as it lasts, without flooding the log: WARN for a session's
 * first failed writes, ERROR from the third (then at the 10th, 100th, 1000th…), ERROR once a
 * minute while only the background retry sees it, and one recovery line a minute at most.
 */
export class DatabaseHealth {
  private failing = false;
  private probing = false;
  private lastError: { message: string; at: number } | null = null;
  private readonly consecutiveFailures = new Map<string, number>();
  private lastOutageReport = Number.NEGATIVE_INFINITY;
  private lastRecovery = Number.NEGATIVE_INFINITY;
  private diskFull = false;
  // When a write or probe last came back, committed or failed.
  private lastAnswer: number;

  constructor(
    private readonly backgroundRetry: boolean,
    private readonly now: () => number = Date.now,
    private readonly logger: HealthLog = new Logger('DatabaseHealth'),
  ) {
    this.lastAnswer = now();
  }

  get isFailing(): boolean {
    return this.failing;
  }

  /**
   * The database's last failure was its disk being full (SQLite, whose file usually shares
   * DATA_DIR, and so the disk, with the journal).
   */
  get databaseDiskFull(): boolean {
    return this.diskFull;
  }

  /**
   * How long no write or probe has come back (since the start, for one that never wrote): for
   * how long "healthy" is only what the database last said.
   */
  quietForMs(): number {
    return this.now() - this.lastAnswer;
  }

  /** Asks to write; a `probe` admission must be handed back to settle(). */
  admit(): Admission {
    if (!this.failing) return 'write';
    if (this.backgroundRetry || this.probing) return 'skip';
    this.probing = true;
    return 'probe';
  }

  settle(admission: Admission): void {
    if (admission === 'probe') this.probing = false;
  }

  /** For the background retry: the one probe, if nobody else is probing. */
  startProbe(): boolean {
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  finishProbe(): void {
    this.probing = false;
  }

  /**
   * A write of `sessionId` (or a probe) committed. True when this ends an outage that is worth
   * a log line: the first recovery in a minute, so that a database that flaps (a heartbeat
   * commits, the write-back does not) does not fill the log.
   */
  succeeded(sessionId?: string): boolean {
    this.lastAnswer = this.now();
    if (sessionId !== undefined) this.consecutiveFailures.delete(sessionId);
    if (!this.failing) return false;
    this.failing = false;
    this.diskFull = false;
    const now = this.now();
    if (now - this.lastRecovery < OUTAGE_REPORT_INTERVAL_MS) return false;
    this.lastRecovery = now;
    return true;
  }

  /**
   * A write of `sessionId` failed with `error`, or was not tried (no error) because the
   * database is known to be failing; `pending` is what the session holds now, for the log.
   */
  failed(sessionId: string, error: unknown, pending: number): void {
    this.lastAnswer = this.now();
    this.failing = true;
    if (error !== undefined) this.noteError(error);
    const failures = (this.consecutiveFailures.get(sessionId) ?? 0) + 1;
    this.consecutiveFailures.set(sessionId, failures);
    // Every failure up to the third, then every tenfold: loud, not a flood at each append.
    if (failures > LOUD_FAILURE_COUNT && !isPowerOfTen(failures)) return;
    const line =
      `Database write for session ${sessionId} ${error === undefined ? 'not tried, the database is failing' : 'failed'} ` +
      `(${failures} consecutive failure(s), ${pending} pending): ${this.lastError?.message ?? 'unknown error'}`;
    if (failures >= LOUD_FAILURE_COUNT) this.logger.error(line);
    else this.logger.warn(line);
  }

  /**
   * The background retry's probe failed (of a failing database, or of an idle one believed
   * healthy); says so at most once a minute.
   */
  probeFailed(error: unknown, backlog: string): void {
    const already = this.failing;
    this.failing = true;
    this.noteError(error);
    const now = this.now();
    this.lastAnswer = now;
    if (now - this.lastOutageReport < OUTAGE_REPORT_INTERVAL_MS) return;
    this.lastOutageReport = now;
    this.logger.error(
      `Database ${already ? 'still ' : ''}not writable (${this.lastError?.message}); ${backlog}`,
    );
  }

  private noteError(error: unknown): void {
    this.lastError = { message: describeError(error), at: this.now() };
    this.diskFull = classifyDatabaseError(error).diskFull;
  }

  /** Forgets a session's failure count (its backlog is gone). */
  forget(sessionId: string): void {
    this.consecutiveFailures.delete(sessionId);
  }

  status(): DatabaseHealthStatus {
    return {
      databaseWritable: !this.failing,
      lastDatabaseError: this.lastError?.message ?? null,
      lastDatabaseErrorAt: this.lastError?.at ?? null,
      consecutiveFailures: this.consecutiveFailures,
    };
  }
}
