import { type TranscriptCheck } from './crash-checker.js';
import { KILL_POINTS, type CrashPlan, type KillPoint } from './crash-plan.js';

/** What the crash suite saw over all its runs, for the closing line on stderr. */
export class CrashFigures {
  runs = 0;
  failedRuns = 0;
  unplannedExits = 0;
  kills = 0;
  acknowledged = 0;
  lost = 0;
  duplicated = 0;
  outOfOrder = 0;
  readonly runsPerDatabase = new Map<string, number>();
  readonly killsAt = new Map<KillPoint, number>(KILL_POINTS.map((point) => [point, 0]));
  control: string | null = null;

  /** A run that got as far as its checks: at the clean restart's ready, and at its end. */
  add(
    plan: CrashPlan,
    kills: number,
    atReady: TranscriptCheck,
    atEnd: TranscriptCheck,
    unplannedExit: boolean,
  ): void {
    this.kills += kills;
    if (unplannedExit) this.unplannedExits += 1;
    this.killsAt.set(plan.killPoint, (this.killsAt.get(plan.killPoint) ?? 0) + kills);
    this.acknowledged += atEnd.acknowledged;
    const lost = new Set(
      [...atReady.lost, ...atEnd.lost].map((message) => message.clientMessageId),
    );
    this.lost += lost.size;
    this.duplicated += Math.max(atReady.duplicated.length, atEnd.duplicated.length);
    this.outOfOrder += Math.max(atReady.outOfOrder.length, atEnd.outOfOrder.length);
  }

  /** Every run, whether it got to its checks or failed before. */
  ran(plan: CrashPlan, failed: boolean): void {
    this.runs += 1;
    if (failed) this.failedRuns += 1;
    this.runsPerDatabase.set(plan.database, (this.runsPerDatabase.get(plan.database) ?? 0) + 1);
  }

  summary(): string {
    const databases = [...this.runsPerDatabase].map(([name, runs]) => `${name} ${runs}`).join(', ');
    const points = [...this.killsAt].map(([point, kills]) => `${point} ${kills}`).join(', ');
    return (
      `crash suite: ${this.runs} runs, ${this.kills} kills, ${this.acknowledged} acknowledged, ` +
      `${this.lost} lost, ${this.duplicated} duplicated, ${this.outOfOrder} out of order ` +
      `(${databases || 'no runs'}; ${this.failedRuns} failed, ` +
      `${this.unplannedExits} server(s) died on their own)\n` +
      `crash suite kills by point: ${points}\n` +
      (this.control ? `crash suite control: ${this.control}\n` : '')
    );
  }
}
