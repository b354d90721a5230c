import { type DatabaseKind } from './databases.js';

/**
 * Where a crash run kills the server with SIGKILL. Every place the durability contract names is
 * here: during appends, half way through a journal write, between a database commit and the
 * journal's clean-up (the drain's and the backlog flush's), and during boot replay.
 */
export const KILL_POINTS = [
  // Failpoint spool.drain-committed@k once the outage ends: a batch read back from the journal
  // is committed, and still in the journal.
  'drain-committed',
  // Failpoint transcript.flush-committed@k once the outage ends: a chunk of the in-memory
  // backlog is committed, and still in the journal.
  'flush-committed',
  // Killed after the outage appends with the journal full, then killed again, once or twice, by
  // spool.drain-committed@k while the restart replays the journal (before it is ready).
  'boot-replay-failpoint',
  // Failpoint journal.torn-write@n during the outage appends: a torn tail on disk.
  'torn-write',
  // An external SIGKILL after n answers during the outage.
  'outage-appends',
  // Killed after the outage appends with the journal full, then an external SIGKILL a seeded
  // delay after the restart was spawned (before, during or after its boot replay).
  'boot-replay-delay',
  // An external SIGKILL a seeded delay after the outage ends: during the background drain and
  // the appends that follow it.
  'recovery-delay',
  // An external SIGKILL after n answers while the database is healthy.
  'healthy-appends',
] as const;

export type KillPoint = (typeof KILL_POINTS)[number];

/** Messages each client sends in each part of a run, and how the run is killed. */
export interface CrashPlan {
  seed: number;
  database: DatabaseKind;
  killPoint: KillPoint;
  sessions: number;
  /** Per client: before the outage, during it (more than the cap: the oldest leave memory), after it ends, after the clean restart. */
  healthy: number;
  outage: number;
  recovery: number;
  afterRestart: number;
  /** After the clean restart, a client first sends again (same client id) what got no answer. */
  resendUnanswered: boolean;
  /**
   * The outage begins once this many healthy appends were answered, with the others in flight
   * (a PostgreSQL connection may be cut during a COMMIT); unset: between the two phases.
   */
  outageAfterAnswers?: number;
  /** SCRIBE_FAILPOINT of the first run (torn-write, drain-committed, flush-committed). */
  failpoint?: string;
  /** External kill after this many answers of the killed phase (healthy-appends, outage-appends). */
  killAfterAnswers?: number;
  /** External kill this long after the outage ends (recovery-delay) or the restart is spawned (boot-replay-delay). */
  killDelayMs?: number;
  /** SCRIBE_FAILPOINT of each restart that is killed during boot replay (boot-replay-failpoint). */
  bootFailpoints?: string[];
}

/** The messages a session holds in memory before the oldest go to the journal only. */
export const CRASH_PENDING_CAP = 4;

/** mulberry32: a small seeded PRNG, so that a seed names one run exactly. Floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [low, high], both included. */
export function between(random: () => number, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

/**
 * The run a seed stands for. The kill point goes round the list by seed, so that any
 * KILL_POINTS.length consecutive seeds hit every one; the rest is drawn from the seed.
 */
export function crashPlan(seed: number, database: DatabaseKind): CrashPlan {
  const random = mulberry32(seed * 2 + (database === 'postgres' ? 1 : 0));
  const killPoint = KILL_POINTS[(seed - 1) % KILL_POINTS.length];
  const sessions = 3;
  const plan: CrashPlan = {
    seed,
    database,
    killPoint,
    sessions,
    healthy: between(random, 2, 5),
    outage: between(random, CRASH_PENDING_CAP + 1, CRASH_PENDING_CAP + 4),
    recovery: between(random, 2, 4),
    afterRestart: between(random, 1, 3),
    resendUnanswered: random() < 0.5,
  };
  if (random() < 0.5 && killPoint !== 'healthy-appends') {
    plan.outageAfterAnswers = between(random, 1, sessions * plan.healthy);
  }
  switch (killPoint) {
    case 'drain-committed':
      // Every session has messages on disk only when the outage ends, and each drains them in
      // one batch: the place is reached at least once per session.
      plan.failpoint = `spool.drain-committed@${between(random, 1, sessions)}`;
      break;
    case 'flush-committed':
      // Every session holds CAP messages in memory when the outage ends: one chunk each.
      plan.failpoint = `transcript.flush-committed@${between(random, 1, sessions)}`;
      break;
    case 'torn-write':
      // A client's appends wait for each other, so each of its outage appends is a write.
      plan.failpoint = `journal.torn-write@${between(random, 1, plan.outage)}`;
      break;
    case 'boot-replay-failpoint':
      // Boot replay drains each session's journal once, and a killed replay resolved nothing
      // on disk: every restart reaches the place once per session again.
      plan.bootFailpoints = Array.from(
        { length: between(random, 1, 2) },
        () => `spool.drain-committed@${between(random, 1, sessions)}`,
      );
      break;
    case 'boot-replay-delay':
      plan.killDelayMs = between(random, 0, 2500);
      break;
    case 'outage-appends':
      plan.killAfterAnswers = between(random, 1, sessions * plan.outage);
      break;
    case 'healthy-appends':
      plan.killAfterAnswers = between(random, 1, sessions * plan.healthy);
      break;
    case 'recovery-delay':
      plan.killDelayMs = between(random, 0, 400);
      break;
  }
  return plan;
}

/** One line that names the run, for test names and failures. */
export function describePlan(plan: CrashPlan): string {
  const fault =
    plan.failpoint ??
    plan.bootFailpoints?.join(', ') ??
    (plan.killAfterAnswers !== undefined
      ? `after ${plan.killAfterAnswers} answer(s)`
      : `after ${plan.killDelayMs} ms`);
  const outage =
    plan.outageAfterAnswers === undefined
      ? ''
      : `, outage from healthy answer ${plan.outageAfterAnswers}`;
  return `${plan.database} seed ${plan.seed}: ${plan.killPoint} (${fault}${outage})`;
}

/**
 * The control run's plan: killed by an external SIGKILL during the outage, after `n` answers,
 * with nothing on disk to bring the held messages back.
 */
export function controlPlan(seed: number): CrashPlan {
  const plan = crashPlan(seed, 'sqlite');
  const random = mulberry32(seed * 2 + 7919);
  return {
    ...plan,
    killPoint: 'outage-appends',
    failpoint: undefined,
    bootFailpoints: undefined,
    killDelayMs: undefined,
    killAfterAnswers: between(random, 1, plan.sessions * plan.outage),
    outageAfterAnswers: undefined,
  };
}
