import { Logger } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { classifyDatabaseError } from './database-errors.js';
import { type DatabaseHeartbeat } from './database-heartbeat.js';
import { type DatabaseReadiness } from './database-readiness.js';

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

/** The database's state, as the write path last saw it: what every report of it reads. */
export interface DatabaseStatus {
  /**
   * Connected and migrated (DatabaseReadiness), and writable: what /health/ready and
   * scribe_database_up say.
   */
  up: boolean;
  /** No write has failed since the last one that committed (pendingStatus.databaseWritable). */
  writable: boolean;
  /** The last failure, described (describeError), and when it happened (epoch ms). */
  lastError: string | null;
  lastErrorAt: number | null;
  /**
   * Why the database cannot take messages though a heartbeat may commit: its last failure was
   * a full disk (that failure, described), and nothing has committed since; null otherwise. A
   * heartbeat needs a page or two, which a failed write leaves free: only a write of the
   * backlog proves that messages fit again (the background retry's probe).
   */
  diskFull: string | null;
  /** Database writes of each session that failed in a row. */
  consecutiveFailures: ReadonlyMap<string, number>;
}

/**
 * The one owner of the database's state, as the write path last saw it: healthy until a write
 * fails, then failing until a write or probe commits again; whether the failure was a full
 * disk; each session's failures in a row. While it fails only one write at a time goes to it,
 * the holder of the one probe lease (with the background retry on, only the retry's probe), so
 * that appends are journaled at once instead of each waiting out a database timeout under its
 * session's lock. An outage gets louder as it lasts, without flooding the log: WARN for a
 * session's first failed writes, ERROR from the third (then at the 10th, 100th, 1000th…),
 * ERROR once a minute while only the background retry sees it, and one recovery line a minute
 * at most. /health, the metrics and pendingStatus read status() and nothing else; /health also
 * proves a commit goes through now (check).
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
    private readonly readiness: Pick<DatabaseReadiness, 'isReady'>,
    // The background retry, when on, is the only writer while the database fails.
    private readonly backgroundRetry: boolean,
    private readonly now: () => number = Date.now,
    private readonly logger: HealthLog = new Logger('DatabaseHealth'),
    // What check() commits. DatabaseModule always gives one; the write path's specs, which
    // never call check(), leave it out.
    private readonly heartbeat?: DatabaseHeartbeat,
  ) {
    this.lastAnswer = now();
  }

  get isFailing(): boolean {
    return this.failing;
  }

  /**
   * How long no write or probe has come back (since the start, for one that never wrote): for
   * how long "healthy" is only what the database last said.
   */
  quietForMs(): number {
    return this.now() - this.lastAnswer;
  }

  /**
   * Runs `write` if the database may be written now: at once while it is healthy; while it
   * fails, only as the one probe (see tryProbe), and never with the background retry on, which
   * probes it itself. Otherwise runs `skip` at once: the write is not tried, and its caller
   * journals instead of waiting out a timeout.
   */
  admit<T>(write: () => Promise<T>, skip: () => Promise<T>): Promise<T> {
    if (!this.failing) return write();
    if (this.backgroundRetry) return skip();
    return this.tryProbe(write, skip);
  }

  /**
   * Runs `probe` holding the one probe lease: a write of a failing database, or the background
   * retry's heartbeat. When another holds it, runs `busy` at once instead.
   */
  async tryProbe<T>(probe: () => Promise<T>, busy: () => Promise<T>): Promise<T> {
    if (this.probing) return busy();
    this.probing = true;
    try {
      return await probe();
    } finally {
      this.probing = false;
    }
  }

  /**
   * /health's active probe: resolves once a heartbeat has committed now, in turn with the
   * writes (DatabaseHeartbeat); rejects with why not. None is tried while the database's disk
   * is known to be full (a heartbeat would commit where no message fits). Outside the probe
   * lease, and neither outcome changes the state: that is for the write path's own writes and
   * the background retry's probe to tell.
   */
  async check(): Promise<void> {
    const { diskFull } = this.status();
    if (diskFull !== null) throw new Error(`the database's disk is full: ${diskFull}`);
    if (this.heartbeat === undefined) throw new Error('DatabaseHealth was given no heartbeat');
    const beat = await this.heartbeat.heartbeat();
    if (beat.kind === 'unavailable') throw beat.error;
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

  status(): DatabaseStatus {
    return {
      up: this.readiness.isReady && !this.failing,
      writable: !this.failing,
      lastError: this.lastError?.message ?? null,
      lastErrorAt: this.lastError?.at ?? null,
      // A full disk is noted with its error, and forgotten once something commits.
      diskFull: this.diskFull && this.lastError ? this.lastError.message : null,
      consecutiveFailures: this.consecutiveFailures,
    };
  }
}
