import { Failpoints } from '../failpoints.js';

/**
 * Failpoints for unit specs: `armed` is armed, and reaching any place calls `onReach` instead
 * of killing the process, so that a spec can see where (and in what order) the code got there.
 */
export class RecordingFailpoints extends Failpoints {
  constructor(
    private readonly armed: string | undefined,
    private readonly onReach: (name: string) => void,
  ) {
    super();
  }

  override isArmed(name: string): boolean {
    return name === this.armed;
  }

  override reach(name: string): void {
    this.onReach(name);
  }
}
