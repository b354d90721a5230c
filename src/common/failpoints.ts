/**
 * Named places in the write path where a crash test can have this process killed, to land a
 * kill -9 exactly where it matters (half way through a journal write, between a database
 * commit and the journal's clean-up). Armed only by the test-only SCRIBE_FAILPOINT setting,
 * `name` or `name@n` (the n-th time the place is reached); unarmed, every check is a compare.
 */
export class Failpoints {
  private readonly name: string | undefined;
  private remaining: number;

  constructor(spec?: string) {
    const match = spec ? /^([a-z][a-z0-9.-]*)(?:@(\d+))?$/.exec(spec) : null;
    if (spec && !match) throw new Error(`not a failpoint: ${spec}`);
    this.name = match?.[1];
    this.remaining = match?.[2] ? Number(match[2]) : 1;
  }

  isArmed(name: string): boolean {
    return this.name === name;
  }

  /** Kills this process with SIGKILL when `name` is armed and this is the n-th time here. */
  reach(name: string): void {
    if (this.name !== name || --this.remaining > 0) return;
    process.kill(process.pid, 'SIGKILL');
  }
}
