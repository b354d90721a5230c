import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { DatabaseReadiness } from './database-readiness.js';
import { SchemaNewerError } from './schema-newer.error.js';

/** What the startup needs of TypeORM's DataSource (built with manualInitialization). */
export interface StartableDataSource {
  readonly isInitialized: boolean;
  /**
   * Connects and runs the migrations; throws SchemaNewerError when the database records one
   * this code does not know (migratingDataSource).
   */
  initialize(): Promise<unknown>;
  destroy(): Promise<void>;
  readonly driver: { disconnect(): Promise<void> };
}

export interface StartupLog {
  error(message: string): void;
  log(message: string): void;
  warn(message: string): void;
  debug(message: string): void;
}

/** How often a start is retried when DB_RETRY_INTERVAL_MS turns the background retry off. */
export const FALLBACK_RETRY_INTERVAL_MS = 1000;

/**
 * Brings the database up: connects and runs the migrations, and while that fails (PostgreSQL
 * unreachable, a SQLite file locked by another process) tries again every retry interval in
 * the background, so that the instance starts and journals during an outage. One line when it
 * starts waiting, one when the database is up; each failed retry only at debug level. A schema
 * newer than the code (SchemaNewerError) is no outage: the start is refused, at once when the
 * database answers the first attempt; when it answers a later one, with one error line, and
 * the database is left alone (reads refused, appends journaled) until a newer Scribe runs.
 */
export class DatabaseStartup
  extends DatabaseReadiness
  implements OnModuleInit, OnApplicationShutdown
{
  private up = false;
  private stopped = false;
  private attempts = 0;
  private lastError: string | null = null;
  private refusal: SchemaNewerError | null = null;
  private waitingSince: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private resolveReady: () => void = () => undefined;
  private readonly whenReady = new Promise<void>((resolve) => {
    this.resolveReady = resolve;
  });

  constructor(
    private readonly dataSource: StartableDataSource,
    private readonly retryIntervalMs: number,
    private readonly logger: StartupLog = new Logger('DatabaseStartup'),
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  get isReady(): boolean {
    return this.up;
  }

  get ready(): Promise<void> {
    return this.whenReady;
  }

  /** Attempts made so far, the successful one included. */
  get attemptCount(): number {
    return this.attempts;
  }

  // The first attempt is waited for: with the database up, the instance is migrated before
  // the journal is written back and before it answers. One that fails is not, unless the
  // schema is newer than the code: then the start is refused.
  async onModuleInit(): Promise<void> {
    await this.attempt();
    if (this.refusal) throw this.refusal;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  protected waitingFor(): string | null {
    return this.lastError;
  }

  private async attempt(): Promise<void> {
    if (this.stopped || this.up || this.refusal) return;
    this.attempts += 1;
    try {
      await this.dataSource.initialize();
    } catch (error) {
      if (error instanceof SchemaNewerError) this.refuse(error);
      else await this.failed(error);
      return;
    }
    // Shut down while connecting: TypeORM closes only a DataSource that was up by then.
    if (this.stopped) {
      await this.dataSource.destroy().catch(() => undefined);
      return;
    }
    this.up = true;
    if (this.waitingSince === null) {
      this.logger.log('Database connected and migrated');
    } else {
      const seconds = ((this.now() - this.waitingSince) / 1000).toFixed(1);
      this.logger.log(
        `Database connected and migrated after ${this.attempts} attempt(s) in ${seconds} s; writing back what was journaled meanwhile`,
      );
    }
    this.resolveReady();
  }

  private refuse(error: SchemaNewerError): void {
    this.refusal = error;
    this.lastError = error.message;
    // The first attempt's refusal stops the start (onModuleInit throws it); a later one cannot.
    if (this.attempts > 1) this.logger.error(`${error.message}; not retried`);
  }

  private async failed(error: unknown): Promise<void> {
    this.lastError = describeError(error);
    // initialize() closes what it opened when the migrations fail, not when the connection
    // itself half opened (a pool, a SQLite file): closed here, or each retry would leak one.
    if (!this.dataSource.isInitialized) {
      await this.dataSource.driver.disconnect().catch(() => undefined);
    }
    const interval = this.retryIntervalMs > 0 ? this.retryIntervalMs : FALLBACK_RETRY_INTERVAL_MS;
    if (this.waitingSince === null) {
      this.waitingSince = this.now();
      this.logger.warn(
        `Database not connected and migrated at start (${this.lastError}); appends are journaled, reads answer DATABASE_UNAVAILABLE, and the start is retried every ${interval} ms`,
      );
    } else {
      this.logger.debug(`Database start attempt ${this.attempts} failed: ${this.lastError}`);
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.attempt(), interval);
    this.timer.unref();
  }
}
