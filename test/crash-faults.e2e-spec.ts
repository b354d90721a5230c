import {
  checkTranscripts,
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
import { checkContract, crashSuite, positiveInteger, seedsFrom } from './support/crash-suite.js';
import { databaseKinds } from './support/databases.js';

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

const figures = new Map<string, { runs: number; failed: number; findings: string[] }>();

afterAll(() => {
  const lines = [...figures].map(
    ([fault, { runs, failed, findings }]) =>
      `crash faults: ${fault}: ${runs} run(s), ${failed} failed${findings.length ? `: ${findings.join('; ')}` : ''}`,
  );
  if (lines.length) process.stderr.write(`${lines.join('\n')}\n`);
});

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

const faultTests = crashSuite<FaultPlan>({
  concurrency: CONCURRENCY,
  timeoutMs: RUN_TIMEOUT_MS,
  name: describeFaultPlan,
  run: async (plan, cleanups) => {
    const figure = figureOf(plan);
    figure.runs += 1;
    const { fault, effects } = journalFault(plan, cleanups);
    const report = await runCrash(plan, cleanups, { fault });
    const atReady = faultCheck(report.sentBeforeRestart, report.storedAtReady, effects);
    const atEnd = faultCheck(report.sent, report.storedAtEnd, effects);
    const what =
      `${summarize('at ready', atReady.check)}; ${summarize('at end', atEnd.check)}; ` +
      `${atEnd.expectedLost} lost with the unlinked segment` +
      `${effects.applied ? '' : '; the fault never came'}` +
      `${effects.notes.length ? `; ${effects.notes.join('; ')}` : ''}`;
    checkContract(atReady.check, atEnd.check, report, what);
    process.stderr.write(`${describeFaultPlan(plan)}: held (${what})\n`);
  },
  failed: (plan, error) => {
    const figure = figureOf(plan);
    figure.failed += 1;
    figure.findings.push(`seed ${plan.seed} (${plan.database}): ${firstLine(error)}`);
    const rerun =
      `CRASH_FAULT_SEED_START=${plan.seed} CRASH_FAULT_SEEDS=1` +
      `${plan.database === 'postgres' ? ' CRASH_FAULT_PG_SEEDS=1' : ''}`;
    error.message = `${describeFaultPlan(plan)}; rerun with ${rerun}: ${error.message}`;
  },
});

function figureOf(plan: FaultPlan): { runs: number; failed: number; findings: string[] } {
  const figure = figures.get(plan.fault) ?? { runs: 0, failed: 0, findings: [] };
  figures.set(plan.fault, figure);
  return figure;
}

function firstLine(error: Error): string {
  return error.message.split('\n')[0].slice(0, 300);
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
