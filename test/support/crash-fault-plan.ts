import { type DatabaseKind } from './databases.js';
import {
  KILL_POINTS,
  between,
  crashPlan,
  describePlan,
  mulberry32,
  type CrashPlan,
  type KillPoint,
} from './crash-plan.js';

/**
 * The journal faults a crash run can combine with its kill (issue 19), applied by
 * crash-faults.ts:
 * - segment-unreadable: a segment's mode is 000 for a while once the outage has answers (the
 *   server runs as an unprivileged user), the drain after it meeting it; restored before any
 *   restart.
 * - segment-vanished: the active segment is unlinked during the outage appends.
 * - clock-jump: the first run's clock is ahead, every restart's is right; one session is
 *   deleted in the ahead run, and the clean restart begins with an outage of its own.
 * - bad-lock: a dead owner whose lock file is a directory (with an empty segment, so that its
 *   lock is tried) is in the spool directory at the clean restart.
 * - start-cut (PostgreSQL only): the clean restart begins with the database cut.
 */
export const SQLITE_FAULTS = [
  'segment-unreadable',
  'segment-vanished',
  'clock-jump',
  'bad-lock',
] as const;
export const POSTGRES_FAULTS = ['start-cut', ...SQLITE_FAULTS] as const;
export type JournalFault = (typeof POSTGRES_FAULTS)[number];

/**
 * The kill points a fault is combined with: all but the kill while healthy (before the outage,
 * where the faults come in) and the failpoints in boot replay (a fault may leave the journal
 * with nothing to replay, and a restart that cannot reach its failpoint proves nothing). In
 * this order, the first seeds pair each fault with a kill that lets its harm show.
 */
export const FAULT_KILL_POINTS: readonly KillPoint[] = [
  'recovery-delay',
  'flush-committed',
  'torn-write',
  'outage-appends',
  'boot-replay-delay',
  'drain-committed',
];

/** A crash plan with a journal fault on top. */
export interface FaultPlan extends CrashPlan {
  fault: JournalFault;
  /** The outage answer after which the fault comes (segment faults). */
  faultAfterAnswers?: number;
  /** How long the fault lasts (segment-unreadable) or the cut at the restart (start-cut). */
  faultMs?: number;
  /** How far ahead the first run's clock is, in seconds (clock-jump). */
  clockAheadS?: number;
}

// Base plans come from crash seeds far above any the crash suite runs, so the crash suite's
// own plans are untouched; the fault's own choices come from a PRNG stream of their own.
const BASE_SEED_OFFSET = 1_000_000;
const FAULT_STREAM = 0x5eed;

/**
 * The run a fault seed stands for. Faults go round by seed, and kill points too, shifted once
 * per full turn of both so that consecutive seeds cover every pairing.
 */
export function faultPlan(seed: number, database: DatabaseKind): FaultPlan {
  const faults = database === 'postgres' ? POSTGRES_FAULTS : SQLITE_FAULTS;
  const index = seed - 1;
  const turn = faults.length * FAULT_KILL_POINTS.length;
  const killPoint =
    FAULT_KILL_POINTS[(index + Math.floor(index / turn)) % FAULT_KILL_POINTS.length];
  // crashPlan() picks KILL_POINTS[(seed - 1) % KILL_POINTS.length]: a base seed with that kill.
  const baseSeed =
    (BASE_SEED_OFFSET + seed) * KILL_POINTS.length + KILL_POINTS.indexOf(killPoint) + 1;
  const base = crashPlan(baseSeed, database);
  const random = mulberry32(seed * 2 + (database === 'postgres' ? 1 : 0) + FAULT_STREAM);
  const plan: FaultPlan = { ...base, seed, fault: faults[index % faults.length] };
  const outageAnswers = base.sessions * base.outage;
  // The last outage answer the fault can come after and still come before the kill.
  const lastAnswer =
    killPoint === 'outage-appends'
      ? (base.killAfterAnswers as number)
      : killPoint === 'torn-write'
        ? Math.max(1, Number(base.failpoint?.split('@')[1]) - 1)
        : outageAnswers;
  switch (plan.fault) {
    case 'segment-unreadable':
      plan.faultAfterAnswers = between(random, 1, lastAnswer);
      plan.faultMs = between(random, 300, 3000);
      break;
    case 'segment-vanished':
      plan.faultAfterAnswers = between(random, 1, lastAnswer);
      break;
    case 'clock-jump':
      // From an hour to 30 days. The deletion is made between the healthy appends and the
      // outage, with the database up and no append of the session in flight.
      plan.clockAheadS = between(random, 3600, 30 * 24 * 3600);
      plan.outageAfterAnswers = undefined;
      break;
    case 'start-cut':
      plan.faultMs = between(random, 2000, 20_000);
      break;
    case 'bad-lock':
      break;
  }
  return plan;
}

/** One line that names the run, for test names and failures. */
export function describeFaultPlan(plan: FaultPlan): string {
  const details = [
    plan.faultAfterAnswers === undefined ? '' : `after outage answer ${plan.faultAfterAnswers}`,
    plan.faultMs === undefined ? '' : `for ${plan.faultMs} ms`,
    plan.clockAheadS === undefined ? '' : `${plan.clockAheadS} s ahead`,
  ].filter(Boolean);
  const fault = details.length ? `${plan.fault} ${details.join(' ')}` : plan.fault;
  return `${fault} + ${describePlan(plan)}`;
}
