import { Injectable } from '@nestjs/common';

/**
 * Whether this instance accepts appends: from the start until its shutdown begins, when the
 * write path stops taking them (TranscriptService.beforeApplicationShutdown) and /health and
 * /health/ready say `shutting_down`. Not the database's state (DatabaseHealth), nor the HTTP
 * front's, which refuses new GraphQL requests one hook earlier (ScribeHttpFront).
 */
@Injectable()
export class AppendIntake {
  private open = true;

  /** False once shutdown has begun: appends are refused from then on. */
  get isAccepting(): boolean {
    return this.open;
  }

  /** Shutdown has begun: no append is accepted any more. */
  close(): void {
    this.open = false;
  }
}
