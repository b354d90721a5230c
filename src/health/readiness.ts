/** What readiness is judged from: state the write path keeps, and one real check of the journal. */
export interface ReadinessSources {
  /** False once shutdown has begun. */
  accepting(): boolean;
  /** The database takes writes, as the write path last saw it (no I/O). */
  databaseWritable(): boolean;
  /** The journal takes writes, as its last append or check found it (no I/O). */
  journalWritable(): boolean;
  /** Tries the journal for real (a file written in SPOOL_DIR): true when it takes a write. */
  checkJournal(): Promise<boolean>;
}

export type ReadyStatus = 'ready' | 'unavailable' | 'shutting_down';

export interface Readiness {
  status: ReadyStatus;
  database: 'up' | 'down';
  journal: 'up' | 'down';
}

/**
 * Whether this instance can take appends durably now: while it accepts them, and the database
 * or the journal can take a write. Judged from what the write path already knows, so that a
 * probe every few seconds costs nothing: no heartbeat row, no file. One exception keeps it
 * from sticking: with both known down, a load balancer sends no appends that would find the
 * journal mended, so the journal is tried for real, at most once per `recheckMs` (concurrent
 * probes share the one check).
 */
export class ReadinessCheck {
  private lastCheck = Number.NEGATIVE_INFINITY;
  private running: Promise<boolean> | undefined;

  constructor(
    private readonly sources: ReadinessSources,
    private readonly recheckMs = 5000,
    private readonly now: () => number = Date.now,
  ) {}

  async check(): Promise<Readiness> {
    const database = this.sources.databaseWritable();
    let journal = this.sources.journalWritable();
    if (!database && !journal && this.sources.accepting()) journal = await this.recheck();
    const status: ReadyStatus = !this.sources.accepting()
      ? 'shutting_down'
      : database || journal
        ? 'ready'
        : 'unavailable';
    return { status, database: database ? 'up' : 'down', journal: journal ? 'up' : 'down' };
  }

  private recheck(): Promise<boolean> {
    if (this.running) return this.running;
    if (this.now() - this.lastCheck < this.recheckMs) return Promise.resolve(false);
    this.lastCheck = this.now();
    this.running = this.sources
      .checkJournal()
      .catch(() => false)
      .finally(() => (this.running = undefined));
    return this.running;
  }
}
