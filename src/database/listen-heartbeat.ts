import { describeError } from '../common/errors/describe-error.js';
import { type ListenHeartbeatSettings } from '../config/scribe-config.js';

/**
 * Proves, every few seconds, that a LISTEN connection still hears. A network path can drop
 * bytes and keep the socket open (a blackholing proxy, a lost NAT entry): the connection then
 * neither errors nor ends, and every commit meanwhile is missed in silence. So a notice is sent
 * through the database on another connection (`send`), and if none comes back on the LISTEN
 * one (`heard`) within the deadline, `deaf` is called once, and the watch stops until start().
 *
 * The deadline runs from the last notice heard, not from the last one sent: a send that fails
 * or hangs is no proof either way, and only says why in the reason.
 */
export class ListenHeartbeat {
  private beats: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private sending = false;
  private sent = 0;
  private lastFailure: string | undefined;
  /** Counts the deadlines set, so that one that fired knows whether it is still the last. */
  private armings = 0;

  constructor(
    private readonly settings: ListenHeartbeatSettings,
    private readonly send: (payload: string) => Promise<unknown>,
    private readonly deaf: (reason: string) => void,
  ) {}

  get watching(): boolean {
    return this.deadline !== undefined;
  }

  /** Begins the watch: LISTEN just answered on the connection, so it heard at this moment. */
  start(): void {
    this.stop();
    this.lastFailure = undefined;
    this.arm();
    this.beats = setInterval(() => this.beat(), this.settings.intervalMs);
    this.beats.unref();
  }

  stop(): void {
    clearInterval(this.beats);
    clearTimeout(this.deadline);
    this.beats = undefined;
    this.deadline = undefined;
  }

  /** One of the feed's own notices came back on the LISTEN connection. */
  heard(): void {
    if (this.watching) this.arm();
  }

  private beat(): void {
    // One at a time: a send that hangs must not pile up more behind it.
    if (this.sending) return;
    this.sending = true;
    this.sent += 1;
    this.send(String(this.sent)).then(
      () => {
        this.sending = false;
        this.lastFailure = undefined;
      },
      (error: unknown) => {
        this.sending = false;
        this.lastFailure = describeError(error);
      },
    );
  }

  private arm(): void {
    clearTimeout(this.deadline);
    const armed = ++this.armings;
    this.deadline = setTimeout(() => {
      // Timers run before the loop reads its sockets: after a stall of the whole process (a
      // long GC, a busy moment) the notice may wait in the socket, unread. Look again once
      // this turn's input has been read.
      setImmediate(() => {
        if (this.armings === armed && this.watching) this.expire();
      });
    }, this.settings.deadlineMs);
    this.deadline.unref();
  }

  private expire(): void {
    // Why, as far as this side knows: the way there (the send failed or hangs: the database
    // is unreachable from here too), or, when the sends went through, the LISTEN path alone.
    const why = this.sending
      ? '; the last one is still being sent'
      : this.lastFailure
        ? `; the last one could not be sent: ${this.lastFailure}`
        : '';
    this.stop();
    this.deaf(`no heartbeat heard within ${this.settings.deadlineMs} ms${why}`);
  }
}
