import { Controller, Logger, Param, Post, Req, Res } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { type Request, type Response } from 'express';
import { AuthFailureLog } from '../../common/auth/auth-failure-log.js';
import { Authenticator } from '../../common/auth/authenticator.js';
import { sessionRouteCaller } from '../../common/auth/session-route-caller.js';
import { describeError } from '../../common/errors/describe-error.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { toSessionModel } from '../../common/graphql/session.mapper.js';
import { httpStatusFor } from '../../common/http/http-refusal.js';
import { claimForScribe } from '../../common/http/refusal-gate.js';
import { sourceOf } from '../../common/http/source-address.js';
import { ScribeConfig } from '../../config/scribe-config.js';
import { SessionUpdates } from '../../database/session-updates.js';
import { SessionChanged } from '../../message/message-events.js';
import { TranscriptService } from '../transcript.service.js';
import { ImportTally } from './import-tally.js';
import { ImportRun } from './import-run.js';
import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';

/**
 * `POST /sessions/{id}/import`: a transcript as its export (format=jsonl) wrote it, streamed in
 * and stored line by line through the write path (ImportRun), with the journal's ordering and
 * durability. The caller is authenticated before this runs (credentialsFirst, as for the
 * export); here it needs `append`, and a JWT limited to a session prefix reaches only its own
 * sessions. The answer counts each message's status, or names the line that was refused and
 * counts what was stored before it; nothing after that line is stored.
 */
@Controller('sessions')
export class ImportController {
  private readonly logger = new Logger(ImportController.name);

  constructor(
    private readonly authenticator: Authenticator,
    private readonly refusals: AuthFailureLog,
    private readonly transcripts: TranscriptService,
    private readonly sessions: SessionUpdates,
    private readonly events: EventEmitter2,
    private readonly config: ScribeConfig,
  ) {}

  @Post(':id/import')
  async import(
    @Param('id') id: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const tally = new ImportTally();
    try {
      // The caller may import into `id`: else refused, the body unread.
      await sessionRouteCaller(this.authenticator, request, id, 'import', 'append');
      const run = new ImportRun(id, this.transcripts, this.config.maxMessageBytes, tally);
      // An answer sent before the body ends (the body deadline's 408) leaves the body unread
      // and its stream open for good: ended here, so that the lines read so far are stored.
      response.once('close', () => {
        if (!request.complete)
          request.destroy(new Error('the answer was sent before the body ended'));
      });
      const head = await run.consume(request);
      const restorable = tally.allPersisted() && run.distinctIds;
      const session = restorable ? await this.restore(id, head, tally) : undefined;
      if (response.headersSent) return;
      response
        .status(200)
        .type('application/json')
        .send(JSON.stringify(tally.answer(id, session !== undefined)));
    } catch (error) {
      this.refuse(request, response, id, error, tally);
    }
  }

  /**
   * The session's own fields as exported, once every message is stored and the session holds
   * exactly them (SessionUpdates.restoreImported). A failure here loses nothing: the messages
   * are stored, and importing the file again restores the fields.
   */
  private async restore(
    id: string,
    head: Parameters<SessionUpdates['restoreImported']>[1],
    tally: ImportTally,
  ): Promise<unknown> {
    try {
      const session = await this.sessions.restoreImported(id, head, tally.messages);
      if (session) this.events.emit(SessionChanged.event, new SessionChanged(session));
      return session ? toSessionModel(session) : undefined;
    } catch (error) {
      this.logger.warn(
        `Import of session ${JSON.stringify(id)}: its messages are stored, but its own fields were not restored (${describeError(error)}); importing the file again restores them`,
      );
      return undefined;
    }
  }

  private refuse(
    request: Request,
    response: Response,
    id: string,
    error: unknown,
    tally: ImportTally,
  ): void {
    if (response.headersSent) {
      this.logger.log(
        `Import of session ${JSON.stringify(id)} cut after line ${tally.lines}: ${describeError(error)}; ${tally.messages} message(s) taken`,
      );
      return;
    }
    claimForScribe(response);
    // The rest of the body is not read: the connection closes once the answer is written.
    response.setHeader('Connection', 'close');
    if (!(error instanceof ScribeException)) {
      if (request.readableAborted || request.destroyed) {
        this.logger.log(
          `Import of session ${JSON.stringify(id)} ended: the client went away after line ${tally.lines}`,
        );
        return;
      }
      this.logger.error(
        `Unhandled error importing session ${JSON.stringify(id)}: ${describeError(error)}`,
        error instanceof Error ? error.stack : undefined,
      );
      response
        .status(500)
        .type('application/json')
        .send(
          JSON.stringify(
            tally.refusal(ScribeErrorCode.InternalServerError, 'Internal server error'),
          ),
        );
      return;
    }
    const refusal = error;
    const status = httpStatusFor(refusal.code);
    if (status === 401 || status === 403) {
      this.refusals.refused(sourceOf(request), describeError(refusal));
    } else if (tally.lines > 0) {
      this.logger.log(
        `Import of session ${JSON.stringify(id)} stopped at line ${tally.lines}: ${refusal.message}`,
      );
    }
    response
      .status(status)
      .type('application/json')
      .send(JSON.stringify(tally.refusal(refusal.code, refusal.message, refusal.field)));
  }
}
