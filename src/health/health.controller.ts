import { Controller, Get, Res } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { type Response } from 'express';
import { describeError } from '../common/errors/describe-error.js';
import { AppendIntake } from '../common/lifecycle/append-intake.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { DatabaseHealth } from '../database/database-health.js';
import { BlockedFiles } from '../spool/blocked-files.js';
import { SpoolOfAnotherDatabase } from '../spool/database-binding-rules.js';
import { SpoolDirectoryError } from '../spool/spool-directory.js';
import { SpoolService } from '../spool/spool.service.js';
import { ReadinessCheck } from './readiness.js';

// A probe that has not answered by then counts as down.
const PROBE_TIMEOUT_MS = 3000;

type HealthStatus = 'ok' | 'degraded' | 'error' | 'shutting_down';

/**
 * Scribe's probes. `GET /health/live`: the process answers (no I/O). `GET /health/ready`:
 * this instance can take appends durably, judged from what the write path knows (ReadinessCheck).
 * `GET /health`, in terminus's shape. 200 while the instance can accept appends: a database
 * outage alone shows as `database: down` with status `degraded`, because queueing is the
 * instance doing its job and a load balancer must not pull every instance at once. 503 only
 * when neither the database nor the spool can take a write, or while shutting down.
 */
@Controller('health')
export class HealthController {
  private readonly readiness: ReadinessCheck;

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly intake: AppendIntake,
    private readonly database: DatabaseHealth,
    private readonly spool: SpoolService,
    private readonly blocked: BlockedFiles,
    private readonly config: ScribeConfig,
  ) {
    this.readiness = new ReadinessCheck({
      accepting: () => this.intake.isAccepting,
      databaseWritable: () => this.database.status().up,
      journalWritable: () => this.spool.writableAsLastSeen,
      checkJournal: () => this.probeJournal(),
    });
  }

  /** Liveness: the event loop turns and Nest routes. Nothing is read or written. */
  @Get('live')
  live(@Res() response: Response): void {
    response.status(200).json({ status: 'ok' });
  }

  /**
   * Readiness: 200 while appends are accepted and the database or the journal takes a write,
   * as the write path last saw them; 503 while shutting down or while neither does.
   */
  @Get('ready')
  async ready(@Res() response: Response): Promise<void> {
    const readiness = await this.readiness.check();
    response.status(readiness.status === 'ready' ? 200 : 503).json(readiness);
  }

  @Get()
  async check(@Res() response: Response): Promise<void> {
    const [database, spool] = await Promise.all([
      this.probe('database', () => this.database.check()),
      this.probe('spool', () => this.spool.checkWritable()),
    ]);
    // Journal files owing messages that cannot be used now (spoolStatus.blocked): a count only.
    Object.assign(spool.spool, { blocked: this.blocked.size });
    const details = { ...database, ...spool };
    const databaseUp = database.database.status === 'up';
    const spoolUp = spool.spool.status === 'up';
    let status: HealthStatus = databaseUp && spoolUp ? 'ok' : 'degraded';
    if (!databaseUp && !spoolUp) status = 'error';
    if (!this.intake.isAccepting) status = 'shutting_down';
    const info = Object.fromEntries(Object.entries(details).filter(([, v]) => v.status === 'up'));
    const error = Object.fromEntries(Object.entries(details).filter(([, v]) => v.status !== 'up'));
    const httpStatus = status === 'ok' || status === 'degraded' ? 200 : 503;
    response.status(httpStatus).json({ status, info, error, details });
  }

  /** The journal tried for real, within the probe's timeout: true when it takes a write. */
  private async probeJournal(): Promise<boolean> {
    const spool = await this.probe('spool', () => this.spool.checkWritable());
    return spool.spool.status === 'up';
  }

  // Outside development only up or down: paths and driver errors are for the admin queries
  // and the logs, not for anyone who can reach a load balancer's health check. A spool of
  // another database, or a SPOOL_DIR that is a symlink or not writable, is a configuration
  // error that no retry mends: its code says so.
  private async probe<Key extends string>(
    key: Key,
    check: () => Promise<void>,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.indicators.check(key);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        check(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
            PROBE_TIMEOUT_MS,
          );
        }),
      ]);
      return indicator.up();
    } catch (error) {
      const code: Record<string, string> =
        error instanceof SpoolOfAnotherDatabase || error instanceof SpoolDirectoryError
          ? { code: error.code }
          : {};
      return this.config.development
        ? indicator.down({ message: describeError(error), ...code })
        : indicator.down(code);
    } finally {
      clearTimeout(timer);
    }
  }
}
