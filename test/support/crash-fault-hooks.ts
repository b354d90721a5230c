import { type SentMessage } from './crash-checker.js';
import { type CrashDatabase } from './crash-database.js';
import { type Workload } from './crash-workload.js';
import { type ServerProcess } from './server-process.js';

/**
 * Where a journal fault comes into a crash run; every hook is optional. A run with a fault
 * kills the first run itself after its recovery appends when the fault kept the planned kill
 * from landing (a failpoint the fault made unreachable), and does not hold the journal to
 * holding every QUEUED message before a boot kill (a fault may have taken some away).
 */
export interface CrashFault {
  /** Over the run's environment: for the first run, and for every restart. */
  env?(run: 'first' | 'restart'): Record<string, string>;
  runAs?: { uid: number; gid: number };
  /** On the fresh data directory, before the first start. */
  prepare?(dataDir: string, spoolDir: string): Promise<void>;
  /** On the first run, between its healthy appends and the outage (the database is up). */
  afterHealthy?(first: ServerProcess, workload: Workload): Promise<void>;
  /** Each answer of the first run's outage, with the count so far. */
  onOutageAnswer?(answers: number): void;
  /** Once the first run is dead, before any restart. */
  afterKill?(): Promise<void>;
  /** Just before the clean restart is spawned. */
  beforeCleanRestart?(database: CrashDatabase): Promise<void>;
  /** The clean restart said it is ready: waits the fault out before the database is read. */
  afterReady?(
    database: CrashDatabase,
    sentBeforeRestart: SentMessage[],
    restarted: ServerProcess,
  ): Promise<void>;
  /** After the read at ready, before the after-restart appends: a phase of the fault's own. */
  restartPhase?(
    restarted: ServerProcess,
    workload: Workload,
    database: CrashDatabase,
  ): Promise<void>;
}

/** What a fault did in its run, for the check and the figures. */
export interface FaultEffects {
  /** Whether the fault came at all (a kill may come first). */
  applied: boolean;
  /**
   * Ids of the records in a segment the fault unlinked, read the moment before: a message
   * whose only durable copy was that file is lost by the fault, not by the server.
   */
  vanishedIds: Set<string>;
  /** Client ids of a deleted session's messages sent before its deletion: none may be stored. */
  deleted: Set<string>;
  notes: string[];
}
