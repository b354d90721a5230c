import { Args, Mutation, Query } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { RequireScope } from '../common/auth/scope.guard.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException, ServerStateException } from '../common/errors/scribe.exception.js';
import { SetAsideActionInput } from './dto/set-aside-action.input.js';
import { SetAsideActionPayload } from './models/set-aside-action-payload.model.js';
import { SpoolStatus } from './models/spool-status.model.js';
import { SetAsideActions, type SetAsideActionOutcome } from './set-aside-actions.js';
import { SpoolService } from './spool.service.js';

const ADMIN_SCOPE =
  'Needs a token with the admin scope (ADMIN_TOKEN, or API_TOKENS or a JWT granting admin).';

/** The payload of a done action, or the error a client is shown. */
function payloadOf(outcome: SetAsideActionOutcome): SetAsideActionPayload {
  switch (outcome.kind) {
    case 'done':
      return {
        id: outcome.id,
        reason: outcome.entry.reason,
        sessionId: outcome.entry.sessionId ?? null,
        messageId: outcome.entry.messageId ?? null,
      };
    case 'not-found':
      // The server's state, not the client's doing: another operator, or the drain, may have
      // closed the entry first. It spends no refusal budget.
      throw new ServerStateException(
        ScribeErrorCode.NotFound,
        `No open set-aside entry ${outcome.id} (among the newest spoolStatus lists): it may have been dropped or re-driven already`,
        'input.id',
      );
    case 'malformed':
      throw ScribeException.invalidInput(
        'input.id',
        `entry ${outcome.id} cannot be re-driven, it holds no valid message: ${outcome.reason}`,
      );
    case 'unavailable':
      throw new ScribeException(
        ScribeErrorCode.JournalUnavailable,
        `Nothing was changed: the spool could not be written now; retry`,
      );
    default: {
      const unhandled: never = outcome;
      throw new Error(`unhandled outcome ${JSON.stringify(unhandled)}`);
    }
  }
}

@ScribeResolver()
export class SpoolResolver {
  constructor(
    private readonly spool: SpoolService,
    private readonly setAside: SetAsideActions,
  ) {}

  @Query(() => SpoolStatus, {
    description: `Admin: the on-disk spool of this instance. ${ADMIN_SCOPE}`,
  })
  @RequireScope('admin')
  spoolStatus(): Promise<SpoolStatus> {
    return this.spool.status();
  }

  @Mutation(() => Boolean, {
    description: `Admin: tries the database now rather than at the next background retry, so that what is pending in memory and in the journal is written back at once once the database is back. Returns true at once; the write-back runs in the background (pendingStatus and spoolStatus show it drain), and one already under way is not started twice. ${ADMIN_SCOPE}`,
  })
  @RequireScope('admin')
  retryNow(): boolean {
    this.spool.retryNow();
    return true;
  }

  @Mutation(() => SetAsideActionPayload, {
    description: `Admin: puts the message of a set-aside entry back into the journal, to be written back to the database as any queued message, and closes the entry (its line stays in set-aside.jsonl, followed by a resolution line). BAD_USER_INPUT when the entry holds no valid message (an unreadable line, still malformed); NOT_FOUND when no open entry has that id; JOURNAL_UNAVAILABLE, and nothing changed, when the spool cannot be written or the entry cannot be read from the log. A message of a session deleted after it was accepted is dropped when it is written back, as the deletion promised. ${ADMIN_SCOPE}`,
  })
  @RequireScope('admin')
  async reDriveSetAside(
    @Args('input', { description: 'The entry to re-drive.' }) input: SetAsideActionInput,
  ): Promise<SetAsideActionPayload> {
    return payloadOf(await this.setAside.redrive(input.id));
  }

  @Mutation(() => SetAsideActionPayload, {
    description: `Admin: closes a set-aside entry for good: its message is not written back. The entry's line stays in set-aside.jsonl, followed by a resolution line, and the log says why it had been set aside. NOT_FOUND when no open entry has that id; JOURNAL_UNAVAILABLE, and nothing changed, when the log cannot be read or written. ${ADMIN_SCOPE}`,
  })
  @RequireScope('admin')
  async dropSetAside(
    @Args('input', { description: 'The entry to drop.' }) input: SetAsideActionInput,
  ): Promise<SetAsideActionPayload> {
    return payloadOf(await this.setAside.drop(input.id));
  }
}
