import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

/**
 * SQLite's `synchronous` setting. FULL syncs every commit to disk: an answered PERSISTED
 * survives a power cut. NORMAL (in WAL mode) survives a crash of Scribe but may lose the last
 * commits to a power cut or kernel crash, and writes much faster.
 */
export const SQLITE_SYNCHRONOUS_MODES = ['FULL', 'NORMAL'] as const;
export type SqliteSynchronousMode = (typeof SQLITE_SYNCHRONOUS_MODES)[number];

/** The refusal of a directory given as only spaces (or, as an option, empty). */
export const BLANK_DIRECTORY = 'must name a directory, not be empty or only spaces';

/** The variables of StoreSettings that are whole numbers, read from plain decimal digits. */
export const STORE_INTEGERS = [
  'PORT',
  'MAX_PENDING_PER_SESSION',
  'DB_RETRY_INTERVAL_MS',
  'DB_IDLE_PROBE_MS',
  'LISTEN_HEARTBEAT_MS',
  'LISTEN_HEARTBEAT_DEADLINE_MS',
  'JOURNAL_MAX_CLOCK_AHEAD_MS',
] as const;

/**
 * Where this instance listens and keeps what it accepts: its address, its data and journal
 * folders, its database and how it retries and listens to it.
 */
export class StoreSettings {
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  @IsNotEmpty()
  HOST = '127.0.0.1';

  // Empty is unset (the default); only spaces would be a directory named ' '.
  @IsString()
  @Matches(/\S/, { message: `DATA_DIR ${BLANK_DIRECTORY}` })
  DATA_DIR = './data';

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'DATABASE_URL must be a postgres:// or postgresql:// URL',
  })
  DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  @Matches(/\S/, { message: `SPOOL_DIR ${BLANK_DIRECTORY}` })
  SPOOL_DIR?: string;

  @IsIn(SQLITE_SYNCHRONOUS_MODES)
  SQLITE_SYNCHRONOUS: SqliteSynchronousMode = 'FULL';

  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_PENDING_PER_SESSION = 200;

  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DB_RETRY_INTERVAL_MS = 1000;

  /**
   * An instance that has written nothing for this long tries the database with a heartbeat (one
   * row per instance, updated), so that its readiness and scribe_database_up tell an outage no
   * write has met. 0 turns it off; it runs with the background retry (DB_RETRY_INTERVAL_MS > 0).
   */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DB_IDLE_PROBE_MS = 10_000;

  /**
   * PostgreSQL only: how often each instance sends itself a notice through the database, to
   * prove that its LISTEN connection (live updates from every instance) still hears.
   */
  @IsInt()
  @Min(100)
  @Max(600_000)
  LISTEN_HEARTBEAT_MS = 2000;

  /**
   * How long an instance may hear none of its notices before it counts its LISTEN connection
   * lost: subscriptions end with SUBSCRIPTION_INTERRUPTED, and it connects again. Must be longer
   * than LISTEN_HEARTBEAT_MS.
   */
  @IsInt()
  @Min(200)
  @Max(3_600_000)
  LISTEN_HEARTBEAT_DEADLINE_MS = 6000;

  /**
   * How far ahead of this instance's clock a journaled record's acceptance time may be before
   * adoption refuses it as from the future (sets it aside, bytes and all). Default one day.
   */
  @IsInt()
  @Min(1000)
  @Max(31_536_000_000)
  JOURNAL_MAX_CLOCK_AHEAD_MS = 86_400_000;
}
