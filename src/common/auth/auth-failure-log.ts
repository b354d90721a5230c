import { Logger } from '@nestjs/common';
import { LogRateLimit } from '../errors/log-rate-limit.js';

/**
 * The one WARN line for refused credentials, wherever they are refused (before GraphQL, or by
 * a scope check): at most once a minute per source address, ten a minute in all, the next line
 * counting what was held back.
 */
export class AuthFailureLog {
  constructor(
    private readonly limit = new LogRateLimit(60_000, 10),
    private readonly logger: Pick<Logger, 'warn'> = new Logger('Access'),
  ) {}

  refused(source: string, reason: string): void {
    const turn = this.limit.take(source);
    if (!turn.write) return;
    const held = turn.suppressed > 0 ? ` (${turn.suppressed} more since the last line)` : '';
    this.logger.warn(`Refused a request from ${source}: ${reason}${held}`);
  }
}
