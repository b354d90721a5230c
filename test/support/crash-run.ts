import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type SentMessage, type StoredTranscripts } from './crash-checker.js';
import {
  postgresCrashDatabase,
  sqliteCrashDatabase,
  type CrashDatabase,
} from './crash-database.js';
import { type CrashFault } from './crash-fault-hooks.js';
import { CRASH_PENDING_CAP, type CrashPlan } from './crash-plan.js';
import {
  READY_LINE,
  READY_TIMEOUT_MS,
  bootingServer,
  externalKiller,
  hasEnded,
  processEnd,
  server,
  snapshot,
  within,
} from './crash-process.js';
import { Workload, type Phase } from './crash-workload.js';
import { readJournal, type AppendStatus, type Cleanups } from './fault-helpers.js';
import { temporaryDataDir } from './server-process.js';

// Bounds on what a run waits for; a busy shared machine may need all of it.
const KILL_TIMEOUT_MS = 30_000;

/** What a crash run saw: the answers, and the database as the clean restart found it and left it. */
export interface CrashRunReport {
  plan: CrashPlan;
  /** Servers that died by SIGKILL where the plan put it. */
  kills: number;
  /** Every message sent before the clean restart, with the answers it got then. */
  sentBeforeRestart: SentMessage[];
  /** The database as soon as the clean restart said it was ready. */
  storedAtReady: StoredTranscripts;
  /** Every message sent, the clean restart's included. */
  sent: SentMessage[];
  /** The database after the clean restart's appends. */
  storedAtEnd: StoredTranscripts;
  /** Log lines of the clean restart's boot replay. */
  bootReplay: string[];
  /** Set when the first run ended other than by the planned SIGKILL: how, and its last output. */
  unplannedExit?: string;
}

export interface CrashRunOptions {
  /**
   * The control: SPOOL_DIR under a regular file, so the journal can take nothing and outage
   * appends are answered BUFFERED (held in memory only).
   */
  unwritableSpool?: boolean;
  /** A journal fault applied on top of the plan's kill (crash-faults.ts). */
  fault?: CrashFault;
}

/**
 * One crash run: a real server on a fresh DATA_DIR, one sequential client per session, appends
 * while the database is healthy, during an outage, and after it ends; a SIGKILL where the plan
 * says (a failpoint of the server's, or an external kill after a seeded number of answers or a
 * seeded delay), a restart killed during its boot replay for the boot kill points, then a
 * clean restart, a read of the database as soon as it is ready, and more appends. Checks only
 * what makes the run the one planned (statuses, that each kill landed); the contract itself is
 * for the caller to check on the report.
 */
export async function runCrash(
  plan: CrashPlan,
  cleanups: Cleanups,
  { unwritableSpool = false, fault }: CrashRunOptions = {},
): Promise<CrashRunReport> {
  const dataDir = await temporaryDataDir();
  cleanups.add(dataDir.remove);
  const database: CrashDatabase =
    plan.database === 'postgres'
      ? await postgresCrashDatabase(cleanups)
      : sqliteCrashDatabase(dataDir.path, cleanups);
  const spoolDir = unwritableSpool
    ? await spoolUnderRegularFile(dataDir.path)
    : join(dataDir.path, 'pending_messages');
  await fault?.prepare?.(dataDir.path, spoolDir);
  const env = {
    DATA_DIR: dataDir.path,
    SPOOL_DIR: spoolDir,
    DB_RETRY_INTERVAL_MS: '100',
    MAX_PENDING_PER_SESSION: String(CRASH_PENDING_CAP),
    ...database.env,
  };
  const sessionIds = Array.from(
    { length: plan.sessions },
    (_, index) => `crash-${plan.database}-${plan.seed}-s${index + 1}`,
  );
  const workload = new Workload(sessionIds);
  const held: AppendStatus = unwritableSpool ? 'BUFFERED' : 'QUEUED';
  let kills = 0;

  // The first run, up to its kill.
  const restartEnv = { ...env, ...fault?.env?.('restart') };
  const first = await server(
    cleanups,
    'first run',
    {
      ...env,
      ...fault?.env?.('first'),
      ...(plan.failpoint ? { SCRIBE_FAILPOINT: plan.failpoint } : {}),
    },
    fault?.runAs,
  );
  const killer = externalKiller(first);
  const isDown = () => killer.sent || hasEnded(first);
  let outage: Promise<void> | null = null;
  const beginOutage = () => (outage ??= database.beginOutage());
  const killedPhase: Phase = plan.killPoint === 'healthy-appends' ? 'healthy' : 'outage';
  workload.onAnswer = (phase, answers) => {
    if (phase === 'healthy' && answers === plan.outageAfterAnswers) {
      // Awaited below; the clients go on sending meanwhile.
      beginOutage().catch(() => undefined);
    }
    if (phase === 'outage') fault?.onOutageAnswer?.(answers);
    if (phase === killedPhase && answers === plan.killAfterAnswers) killer.kill();
  };
  await workload.run(first, 'healthy', plan.healthy);
  if (!isDown()) {
    if (plan.outageAfterAnswers === undefined) expectStatuses(workload, 'healthy', 'PERSISTED');
    await fault?.afterHealthy?.(first, workload);
    await beginOutage();
    await workload.run(first, 'outage', plan.outage);
  }
  if (!isDown()) {
    // A fault may make the journal unwritable: BUFFERED is then the true answer.
    if (!fault) expectStatuses(workload, 'outage', held);
    if (plan.killPoint.startsWith('boot-replay') && fault) {
      killer.kill();
    } else if (plan.killPoint.startsWith('boot-replay')) {
      // Nothing could be stored: the journal holds every outage message, and the restart
      // starts with all of it to replay.
      const journaled = (await readJournal(spoolDir)).map((line) => line.id).sort();
      const queued = workload
        .sent()
        .filter((message) => message.answer?.status === 'QUEUED')
        .map((message) => message.answer?.id)
        .sort();
      if (JSON.stringify(journaled) !== JSON.stringify(queued)) {
        throw new Error(
          `the journal does not hold exactly the QUEUED messages: journal ${JSON.stringify(journaled)}, queued ${JSON.stringify(queued)}`,
        );
      }
      killer.kill();
    } else {
      await database.endOutage();
      if (plan.killPoint === 'recovery-delay') {
        const timer = setTimeout(() => killer.kill(), plan.killDelayMs);
        cleanups.add(() => Promise.resolve(clearTimeout(timer)));
      }
      await workload.run(first, 'recovery', plan.recovery);
      if (fault) killer.kill();
    }
  }
  const end = await within(
    processEnd(first.child),
    KILL_TIMEOUT_MS,
    `the first run was not killed (${plan.killPoint})`,
  );
  // A server that dies on its own is a bug in itself; the run goes on to the contract's checks
  // as after any crash, and the caller fails it with this.
  const unplannedExit =
    end.signal === 'SIGKILL'
      ? undefined
      : `the first run died on its own (${JSON.stringify(end)}), not at its kill point:\n` +
        first.output().slice(-3000);
  if (!unplannedExit) {
    if (plan.failpoint && killer.sent && !fault) {
      throw new Error(`the first run never reached its failpoint ${plan.failpoint}`);
    }
    kills += 1;
  }
  await database.endOutage();
  await fault?.afterKill?.();

  // Restarts with the journal full, each killed during its boot replay.
  for (const failpoint of unplannedExit ? [] : (plan.bootFailpoints ?? [])) {
    const booting = bootingServer(
      cleanups,
      `restart killed at ${failpoint}`,
      { ...restartEnv, SCRIBE_FAILPOINT: failpoint },
      fault?.runAs,
    );
    const bootEnd = await within(
      booting.ended,
      READY_TIMEOUT_MS,
      `the restart did not die at ${failpoint}`,
    );
    if (bootEnd.signal !== 'SIGKILL' || READY_LINE.test(booting.output())) {
      throw new Error(
        `the restart was to die at ${failpoint} during boot replay; it ended by ${JSON.stringify(bootEnd)}`,
      );
    }
    kills += 1;
  }
  if (plan.killPoint === 'boot-replay-delay' && !unplannedExit) {
    const booting = bootingServer(
      cleanups,
      `restart killed ${plan.killDelayMs} ms after spawn`,
      restartEnv,
      fault?.runAs,
    );
    await new Promise((resolveDelay) => setTimeout(resolveDelay, plan.killDelayMs));
    if (hasEnded(booting)) throw new Error('the restart ended before it was killed');
    booting.child.kill('SIGKILL');
    await within(booting.ended, KILL_TIMEOUT_MS, 'the restart did not die of SIGKILL');
    kills += 1;
  }

  // The clean restart: boot replay is done once it says it is ready.
  const sentBeforeRestart = snapshot(workload.sent());
  await fault?.beforeCleanRestart?.(database);
  const restarted = await server(cleanups, 'clean restart', restartEnv, fault?.runAs);
  await fault?.afterReady?.(database, sentBeforeRestart, restarted);
  const storedAtReady = await database.read();
  await fault?.restartPhase?.(restarted, workload, database);
  if (plan.resendUnanswered) await workload.resendUnanswered(restarted, 'after-restart');
  await workload.run(restarted, 'after-restart', plan.afterRestart);
  if (hasEnded(restarted)) throw new Error('the clean restart died during its appends');
  expectStatuses(workload, 'after-restart', 'PERSISTED');
  return {
    plan,
    kills,
    sentBeforeRestart,
    storedAtReady,
    sent: snapshot(workload.sent()),
    storedAtEnd: await database.read(),
    bootReplay: restarted
      .output()
      .split('\n')
      .filter((line) => /Boot replay|Journal: set aside/.test(line)),
    unplannedExit,
  };
}

/** A spool directory that cannot be created: its parent is a regular file. */
/** A SPOOL_DIR the journal can never use: a path under a regular file. */
export async function spoolUnderRegularFile(dataDir: string): Promise<string> {
  const blocker = join(dataDir, 'not-a-directory');
  await writeFile(blocker, 'a regular file where the spool directory should be\n');
  return join(blocker, 'spool');
}

function expectStatuses(workload: Workload, phase: Phase, status: AppendStatus): void {
  const statuses = workload.statuses(phase);
  if (statuses.some((answered) => answered !== status)) {
    throw new Error(`${phase} appends were to be answered ${status}: ${statuses.join(', ')}`);
  }
}
