import { Semaphore } from 'async-mutex';
import { describeFindings, isClean, type TranscriptCheck } from './crash-checker.js';
import { type CrashRunReport } from './crash-run.js';
import { Cleanups } from './fault-helpers.js';

// What the crash suites (crash.e2e-spec.ts, crash-faults.e2e-spec.ts) share: their settings
// from the environment, the contract's verdict on a run, and the tests that run their plans a
// few at a time. Runs are mostly waiting on processes, so they overlap; each still fails its
// own test, with the plan and how to rerun it in front.

/** The variable `name` as a positive integer, `fallback` when unset; anything else throws. */
export function positiveInteger(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new Error(`${name} must be a positive integer, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

export function seedsFrom(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, index) => start + index);
}

/**
 * Throws when the contract is broken at the clean restart's ready or after its appends, or
 * when the first run ended other than as planned; `what` sums the run up in either message.
 */
export function checkContract(
  atReady: TranscriptCheck,
  atEnd: TranscriptCheck,
  report: Pick<CrashRunReport, 'bootReplay' | 'unplannedExit'>,
  what?: string,
): void {
  if (!isClean(atReady) || !isClean(atEnd)) {
    throw new Error(
      `the contract is broken${what === undefined ? '' : ` (${what})`}\n` +
        `at the clean restart's ready:\n${describeFindings(atReady) || '(nothing)'}\n` +
        `after its appends:\n${describeFindings(atEnd) || '(nothing)'}\n` +
        `boot replay: ${report.bootReplay.join('\n') || '(no log line)'}`,
    );
  }
  if (report.unplannedExit) {
    throw new Error(
      `${report.unplannedExit}\n(the contract held after it${what === undefined ? '' : `: ${what}`})`,
    );
  }
}

export interface CrashSuite<Plan> {
  /** Runs at a time (CRASH_CONCURRENCY). */
  concurrency: number;
  timeoutMs: number;
  /** The test's name for a plan. */
  name: (plan: Plan) => string;
  /** One run and the contract's checks on it; throws at the first thing broken. */
  run: (plan: Plan, cleanups: Cleanups) => Promise<void>;
  /** The Error a run threw, before its test fails with it: say which plan and how to rerun. */
  failed: (plan: Plan, error: Error) => void;
  /** Once a run is over, before its clean-ups. */
  ran?: (plan: Plan, failed: boolean) => void;
}

type Settled = { ok: true } | { ok: false; error: unknown };

/**
 * Returns what declares the tests for a list of plans, the runs overlapping: each test starts
 * its run and the next `concurrency - 1` ones, then awaits its own. One slot pool serves every
 * list, so that two describe blocks never run more than `concurrency` at once between them.
 */
export function crashSuite<Plan>(suite: CrashSuite<Plan>): (plans: Plan[]) => void {
  const slots = new Semaphore(suite.concurrency);

  /** One run in a slot of its own. Never rejects: it is started before its test awaits it. */
  const checkedRun = (plan: Plan): Promise<Settled> =>
    slots.runExclusive(async () => {
      const cleanups = new Cleanups();
      let failed = true;
      try {
        await cleanups.guard(async () => {
          try {
            await suite.run(plan, cleanups);
          } catch (error) {
            if (error instanceof Error) suite.failed(plan, error);
            throw error;
          }
        });
        failed = false;
        return { ok: true };
      } catch (error) {
        return { ok: false, error };
      } finally {
        suite.ran?.(plan, failed);
        await cleanups.run().catch(() => undefined);
      }
    });

  return (plans) => {
    const runs = new Map<number, Promise<Settled>>();
    const start = (index: number) => {
      if (index < plans.length && !runs.has(index)) runs.set(index, checkedRun(plans[index]));
    };
    // A run started ahead for a test that was then filtered out still finishes in this file.
    afterAll(() => Promise.all(runs.values()), suite.timeoutMs);
    plans.forEach((plan, index) => {
      it(
        suite.name(plan),
        async () => {
          for (let ahead = index; ahead < index + suite.concurrency; ahead++) start(ahead);
          const settled = await (runs.get(index) as Promise<Settled>);
          if (!settled.ok) throw settled.error;
        },
        suite.timeoutMs,
      );
    });
  };
}
