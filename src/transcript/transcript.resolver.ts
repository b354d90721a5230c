import { Args, Mutation, Query, Resolver } from '@nestjs/graphql';
import { RequireScope } from '../common/auth/scope.guard.js';
import { AppendMessageInput } from './dto/append-message.input.js';
import { AppendMessagesInput } from './dto/append-messages.input.js';
import { toMessageModel } from '../common/graphql/message.mapper.js';
import { AppendMessagePayload, AppendMessagesPayload } from './models/append-payload.model.js';
import { PendingStatus } from './models/pending-status.model.js';
import { TranscriptService } from './transcript.service.js';

@Resolver()
export class TranscriptResolver {
  constructor(private readonly transcripts: TranscriptService) {}

  @Mutation(() => AppendMessagePayload, {
    description:
      'Appends one message to a session, creating the session if it is new. The status says what the answer promises: committed (PERSISTED), in the journal on local disk until the database takes it (QUEUED), or held in memory only because neither could take it (BUFFERED).',
  })
  @RequireScope('append', 'input.sessionId')
  async appendMessage(@Args('input') input: AppendMessageInput): Promise<AppendMessagePayload> {
    const { sessionId, ...message } = input;
    const result = await this.transcripts.append(sessionId, [message], () => 'input');
    return { message: toMessageModel(result.records[0], result.status), status: result.status };
  }

  @Mutation(() => AppendMessagesPayload, {
    description:
      'Appends several messages to one session in one round trip, stored atomically and in order. The status is the weakest promise among them.',
  })
  @RequireScope('append', 'input.sessionId')
  async appendMessages(@Args('input') input: AppendMessagesInput): Promise<AppendMessagesPayload> {
    const result = await this.transcripts.append(
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
    const status = this.transcripts.pendingStatus();
    return {
      ...status,
      lastDatabaseErrorAt:
        status.lastDatabaseErrorAt === null ? null : new Date(status.lastDatabaseErrorAt),
    };
  }
}
