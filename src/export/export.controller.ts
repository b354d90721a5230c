import {
  Controller,
  Get,
  Inject,
  Logger,
  Param,
  Query,
  Req,
  Res,
  type BeforeApplicationShutdown,
} from '@nestjs/common';
import { type Request, type Response } from 'express';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { sessionRouteCaller } from '../common/auth/session-route-caller.js';
import { describeError } from '../common/errors/describe-error.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { toSessionModel } from '../common/graphql/session.mapper.js';
import { answerRefusal, answerScribeRefusal, httpStatusFor } from '../common/http/http-refusal.js';
import { sourceOf } from '../common/http/source-address.js';
import { EXPORT_DRAIN_TIMEOUT_MS } from './export.tokens.js';
import { StoredTranscripts, type OpenedTranscript } from './stored-transcripts.js';
import {
  EXPORT_FORMATS,
  attachmentOf,
  exportFormatOf,
  type ExportFormat,
} from './transcript-formats.js';
import { TranscriptStream, type ExportOutcome } from './transcript-stream.js';

/**
 * An error for the logs: a database outage's own reason (DatabaseReadError and
 * DatabaseNotReadyError keep it for the logs, not the client), else the error described.
 */
function reasonOf(error: unknown): string {
  const reason = (error as { reason?: unknown } | null)?.reason;
  return typeof reason === 'string' ? `${describeError(error)}: ${reason}` : describeError(error);
}

/**
 * `GET /sessions/{id}/export?format=jsonl|markdown|json`: a stored transcript, streamed as a
 * file. The caller is authenticated before this runs (credentialsFirst, on Scribe's path, as
 * for /graphql); here it needs `read`, and a JWT limited to a session prefix reaches only its
 * own sessions, as `session(id)` does. Refusals are Scribe's JSON errors, charged to the
 * source's refusal budget like any 4xx on Scribe's paths. Once the first byte is sent, a
 * failure can only cut the connection (TranscriptStream).
 */
@Controller('sessions')
export class ExportController implements BeforeApplicationShutdown {
  private readonly logger = new Logger(ExportController.name);
  // Aborted at shutdown: an export in flight is cut (its client sees a truncated transfer and
  // retries elsewhere) rather than holding the shutdown or reading a closing database.
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly authenticator: Authenticator,
    private readonly refusals: AuthFailureLog,
    private readonly transcripts: StoredTranscripts,
    @Inject(EXPORT_DRAIN_TIMEOUT_MS) private readonly drainTimeoutMs: number,
  ) {}

  @Get(':id/export')
  async export(
    @Param('id') id: string,
    @Query('format') format: unknown,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const stop = new AbortController();
    this.inFlight.add(stop);
    try {
      const { transcript, format: asked } = await this.open(request, id, format);
      const spec = EXPORT_FORMATS[asked];
      response.status(200);
      response.setHeader('Content-Type', spec.contentType);
      response.setHeader('Content-Disposition', attachmentOf(id, asked));
      response.setHeader('Cache-Control', 'no-store');
      response.setHeader('X-Content-Type-Options', 'nosniff');
      // No Content-Length: the length is known only once written (chunked).
      if (request.method === 'HEAD') return void response.end();
      const stream = new TranscriptStream(response, spec.formatter, {
        drainTimeoutMs: this.drainTimeoutMs,
        signal: stop.signal,
      });
      const { session, first, next } = transcript;
      const outcome = await stream.run(toSessionModel(session), first, next);
      this.report(id, outcome);
    } catch (error) {
      this.refuse(request, response, id, error);
    } finally {
      this.inFlight.delete(stop);
    }
  }

  beforeApplicationShutdown(): void {
    if (this.inFlight.size === 0) return;
    this.logger.log(`Shutting down: cutting ${this.inFlight.size} export(s) in flight`);
    for (const stop of this.inFlight) stop.abort();
  }

  /**
   * The transcript, once the caller may have it and the request is sound: the scope, the prefix
   * (as ScopeGuard checks them, before the arguments), the id and the format, then the session.
   */
  private async open(
    request: Request,
    id: string,
    format: unknown,
  ): Promise<{ transcript: OpenedTranscript; format: ExportFormat }> {
    await sessionRouteCaller(this.authenticator, request, id, 'export', 'read');
    const asked = exportFormatOf(format);
    const transcript = await this.transcripts.open(id);
    if (!transcript) {
      throw new ScribeException(ScribeErrorCode.NotFound, `No session ${id} is stored`);
    }
    return { transcript, format: asked };
  }

  /** An export refused (or failed) before its first byte: a JSON error, no stack. */
  private refuse(request: Request, response: Response, id: string, error: unknown): void {
    if (response.headersSent) {
      // Not reached: once the answer has begun, TranscriptStream reports instead of throwing.
      response.destroy();
      return;
    }
    if (error instanceof ScribeException) {
      const status = httpStatusFor(error.code);
      if (status === 401 || status === 403) {
        this.refusals.refused(sourceOf(request), describeError(error));
      } else {
        this.logger.debug(`Refused an export of ${JSON.stringify(id)}: ${reasonOf(error)}`);
      }
      answerScribeRefusal(response, status, error);
      return;
    }
    this.logger.error(
      `Unhandled error exporting session ${JSON.stringify(id)}: ${describeError(error)}`,
      error instanceof Error ? error.stack : undefined,
    );
    answerRefusal(response, 500, ScribeErrorCode.InternalServerError, 'Internal server error');
  }

  /** One line for how an export that began ended: at WARN when the database failed it. */
  private report(id: string, outcome: ExportOutcome): void {
    const what = `Export of session ${JSON.stringify(id)}`;
    const after = `after ${outcome.messages} message(s)`;
    switch (outcome.kind) {
      case 'complete':
        return this.logger.debug(`${what} complete: ${outcome.messages} message(s)`);
      case 'gone':
        return this.logger.debug(`${what} ended: the client went away ${after}`);
      case 'stopped':
        return this.logger.debug(`${what} cut by the shutdown ${after}`);
      case 'stalled':
        return this.logger.debug(
          `${what} cut: the client took nothing for ${this.drainTimeoutMs} ms ${after}`,
        );
      case 'failed':
        return this.logger.warn(
          `${what} cut ${after}: its next page could not be read (${reasonOf(outcome.error)}); the client sees a truncated transfer`,
        );
    }
  }
}
