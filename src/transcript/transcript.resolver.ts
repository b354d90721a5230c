import { Logger } from '@nestjs/common';
import { Args, Mutation, Query } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { RequireScope } from '../common/auth/scope.guard.js';
import { AppendMessageInput } from './dto/append-message.input.js';
import { AppendMessagesInput } from './dto/append-messages.input.js';
import { toMessageModel } from '../common/graphql/message.mapper.js';
import { AppendMessagePayload, AppendMessagesPayload } from './models/append-payload.model.js';
import { PendingStatus } from './models/pending-status.model.js';
import { TranscriptService } from './transcript.service.js';
import { SessionEraser, type Erased } from './session-eraser.js';
import { DeleteSessionArgs, DeleteSessionPayload } from './models/delete-session-payload.model.js';
import { describeError } from '../common/errors/describe-error.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type Unpiped } from '../common/validation/validation.pipe.js';

@ScribeResolver()
export class TranscriptResolver {
  private readonly logger = new Logger('TranscriptResolver');

  constructor(
    private readonly transcripts: TranscriptService,
    private readonly eraser: SessionEraser,
  ) {}

  @Mutation(() => DeleteSessionPayload, {
    description:
      "Admin: deletes a session for good: its messages and metadata in the database, what any instance holds of it for the database (in memory or in its journal), and a message accepted before the deletion that reaches the database later. Its subscribers' subscriptions end with SESSION_DELETED. DATABASE_UNAVAILABLE, and nothing deleted, while the database cannot be reached.",
  })
  @RequireScope('admin')
  async deleteSession(@Args() args: DeleteSessionArgs): Promise<DeleteSessionPayload> {
    let erased: Erased;
    try {
      erased = await this.eraser.erase(args.id);
    } catch (error) {
      // The reason names a host, a path or a driver's words: for the log, not the client.
      this.logger.warn(`deleteSession ${args.id} failed, nothing deleted: ${describeError(error)}`);
      throw new ScribeException(
        ScribeErrorCode.DatabaseUnavailable,
        `Session ${args.id} was not deleted: the database could not delete it now; retry`,
      );
    }
    return {
      id: args.id,
      deleted: erased.existed || erased.held > 0,
      storedMessages: erased.stored,
      heldMessages: erased.held,
    };
  }

  @Mutation(() => AppendMessagePayload, {
    description:
      'Appends one message to a session, creating the session if it is new. The status says what the answer promises: committed (PERSISTED), in the journal on local disk until the database takes it (QUEUED), or held in memory only because neither could take it (BUFFERED).',
  })
  @RequireScope('append', 'input.sessionId')
  async appendMessage(
    @Args('input', {
      type: () => AppendMessageInput,
      description: 'The session and the message to append to it.',
    })
    input: Unpiped<AppendMessageInput>,
  ): Promise<AppendMessagePayload> {
    const { sessionId, ...message } = input;
    const result = await this.transcripts.appendRecords(sessionId, [message], () => 'input');
    return { message: toMessageModel(result.records[0], result.status), status: result.status };
  }

  @Mutation(() => AppendMessagesPayload, {
    description:
      'Appends several messages to one session in one round trip, stored atomically and in order. The status is the weakest promise among them.',
  })
  @RequireScope('append', 'input.sessionId')
  async appendMessages(
    @Args('input', {
      type: () => AppendMessagesInput,
      description: 'The session and its messages, in the order to store them.',
    })
    input: Unpiped<AppendMessagesInput>,
  ): Promise<AppendMessagesPayload> {
    const result = await this.transcripts.appendRecords(
      input.sessionId,
      input.messages,
      (index) => `input.messages.${index}`,
    );
    return {
      messages: result.records.map((record) => toMessageModel(record, result.status)),
      status: result.status,
    };
  }

  @Query(() => PendingStatus, {
    description:
      'Admin: pending queues and database health of this instance. Needs a token with the admin scope (ADMIN_TOKEN, or API_TOKENS or a JWT granting admin).',
  })
  @RequireScope('admin')
  pendingStatus(): PendingStatus {
    return this.transcripts.pendingStatus();
  }
}
