import { Semaphore } from 'async-mutex';
import {
  checkTranscripts,
  describeFindings,
  isClean,
  type SentMessage,
  type StoredTranscripts,
  type TranscriptCheck,
} from './support/crash-checker.js';
import {
  POSTGRES_FAULTS,
  SQLITE_FAULTS,
  describeFaultPlan,
  faultPlan,
  type FaultPlan,
} from './support/crash-fault-plan.js';
import { type FaultEffects } from './support/crash-fault-hooks.js';
import { journalFault } from './support/crash-faults.js';
import { runCrash } from './support/crash-run.js';
import { databaseKinds } from './support/databases.js';
import { Cleanups } from './support/fault-helpers.js';

// The crash suite's kills (crash.e2e-spec.ts) combined with the journal faults of issue 19,
// one fault per run on top of one kill point (crash-fault-plan.ts), then the clean restart and
// the same contract: every message answered PERSISTED or QUEUED is stored exactly once, in its
// session's acceptance order. Rerun one with
//   CRASH_FAULT_SEED_START=<seed> CRASH_FAULT_SEEDS=1 CRASH_FAULT_PG_SEEDS=1 npm run test:crash-faults
// and run many with CRASH_FAULT_SEEDS=<n> (SQLite) and CRASH_FAULT_PG_SEEDS=<n> (PostgreSQL).
const SEEDS = positiveInteger('CRASH_FAULT_SEEDS', SQLITE_FAULTS.length);
const SEED_START = positiveInteger('CRASH_FAULT_SEED_START', 1);
// The first PostgreSQL seed is the fault of PostgreSQL's own: a start with the database cut.
const POSTGRES_SEEDS = positiveInteger('CRASH_FAULT_PG_SEEDS', 1);
const CONCURRENCY = positiveInteger('CRASH_CONCURRENCY', 2);
const RUN_TIMEOUT_MS = 240_000;

const slots = new Semaphore(CONCURRENCY);
const figures = new Map<string, { runs: number; failed: number; findings: string[] }>();

afterAll(() => {
  const lines = [...figures].map(
    ([fault, { runs, failed, findings }]) =>
      `crash faults: ${fault}: ${runs} run(s), ${failed} failed${findings.length ? `: ${findings.join('; ')}` : ''}`,
  );
  if (lines.length) process.stderr.write(`${lines.join('\n')}\n`);
});

function positiveInteger(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new Error(`${name} must be a positive integer, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

function seedsFrom(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, index) => start + index);
}

/**
 * The contract as the fault leaves it. A deleted session's messages sent before the deletion
 * are taken out of what was sent: one stored anyway is then a row no client sent, a finding.
 * A message whose record was in a segment the fault unlinked may be lost, and only lost: it
 * still counts for duplicates and order, and its loss is counted apart.
 */
function faultCheck(
  sent: readonly SentMessage[],
  stored: StoredTranscripts,
  effects: FaultEffects,
): { check: TranscriptCheck; expectedLost: number } {
  const kept = sent.filter((message) => !effects.deleted.has(message.clientMessageId));
  const check = checkTranscripts(kept, stored);
  const vanished = (message: SentMessage) =>
    message.answer?.status === 'QUEUED' && effects.vanishedIds.has(message.answer.id);
  const expectedLost = check.lost.filter(vanished).length;
  return { check: { ...check, lost: check.lost.filter((m) => !vanished(m)) }, expectedLost };
}

function summarize(label: string, check: TranscriptCheck): string {
  return (
    `${label} ${check.lost.length} lost, ${check.duplicated.length} duplicated, ` +
    `${check.outOfOrder.length} out of order, ${check.unexpected.length} unexpected, ` +
    `${check.miscounted.length} miscounted of ${check.acknowledged}`
  );
}

type Settled = { ok: true } | { ok: false; error: unknown };

/** One fault run under the contract's checks, in a slot of its own; never rejects. */
async function checkedRun(plan: FaultPlan): Promise<Settled> {
  return slots.runExclusive(async () => {
    const cleanups = new Cleanups();
    const figure = figures.get(plan.fault) ?? { runs: 0, failed: 0, findings: [] };
    figures.set(plan.fault, figure);
    figure.runs += 1;
    const { fault, effects } = journalFault(plan, cleanups);
    const rerun =
      `CRASH_FAULT_SEED_START=${plan.seed} CRASH_FAULT_SEEDS=1` +
      `${plan.database === 'postgres' ? ' CRASH_FAULT_PG_SEEDS=1' : ''}`;
    try {
      await cleanups.guard(async () => {
        try {
          const report = await runCrash(plan, cleanups, { fault });
          const atReady = faultCheck(report.sentBeforeRestart, report.storedAtReady, effects);
          const atEnd = faultCheck(report.sent, report.storedAtEnd, effects);
          const what =
            `${summarize('at ready', atReady.check)}; ${summarize('at end', atEnd.check)}; ` +
            `${atEnd.expectedLost} lost with the unlinked segment` +
            `${effects.applied ? '' : '; the fault never came'}` +
            `${effects.notes.length ? `; ${effects.notes.join('; ')}` : ''}`;
          if (!isClean(atReady.check) || !isClean(atEnd.check)) {
            throw new Error(
              `the contract is broken (${what})\n` +
                `at the clean restart's ready:\n${describeFindings(atReady.check) || '(nothing)'}\n` +
                `after its appends:\n${describeFindings(atEnd.check) || '(nothing)'}\n` +
                `boot replay: ${report.bootReplay.join('\n') || '(no log line)'}`,
            );
          }
          if (report.unplannedExit) {
            throw new Error(`${report.unplannedExit}\n(the contract held after it: ${what})`);
          }
          process.stderr.write(`${describeFaultPlan(plan)}: held (${what})\n`);
        } catch (error) {
          if (error instanceof Error) {
            figure.failed += 1;
            figure.findings.push(`seed ${plan.seed} (${plan.database}): ${firstLine(error)}`);
            error.message = `${describeFaultPlan(plan)}; rerun with ${rerun}: ${error.message}`;
          }
          throw error;
        }
      });
      return { ok: true };
    } catch (error) {
      return { ok: false, error };
    } finally {
      await cleanups.run().catch(() => undefined);
    }
  });
}

function firstLine(error: Error): string {
  return error.message.split('\n')[0].slice(0, 300);
}

/** Tests for a list of plans, CONCURRENCY runs overlapping (as in crash.e2e-spec.ts). */
function faultTests(plans: FaultPlan[]): void {
  const runs = new Map<number, Promise<Settled>>();
  const start = (index: number) => {
    if (index < plans.length && !runs.has(index)) runs.set(index, checkedRun(plans[index]));
  };
  afterAll(() => Promise.all(runs.values()), RUN_TIMEOUT_MS);
  plans.forEach((plan, index) => {
    it(
      describeFaultPlan(plan),
      async () => {
        for (let ahead = index; ahead < index + CONCURRENCY; ahead++) start(ahead);
        const settled = await (runs.get(index) as Promise<Settled>);
        if (!settled.ok) throw settled.error;
      },
      RUN_TIMEOUT_MS,
    );
  });
}

describe(`crash runs with a journal fault on SQLite (seeds ${SEED_START} to ${SEED_START + SEEDS - 1}; faults ${SQLITE_FAULTS.join(', ')})`, () => {
  faultTests(seedsFrom(SEED_START, SEEDS).map((seed) => faultPlan(seed, 'sqlite')));
});

const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

describeOnPostgres(
  `crash runs with a journal fault on PostgreSQL (seeds ${SEED_START} to ${SEED_START + POSTGRES_SEEDS - 1}; faults ${POSTGRES_FAULTS.join(', ')})`,
  () => {
    faultTests(seedsFrom(SEED_START, POSTGRES_SEEDS).map((seed) => faultPlan(seed, 'postgres')));
  },
);
