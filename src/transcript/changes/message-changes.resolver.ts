import { Args, Mutation } from '@nestjs/graphql';
import { RequireScope } from '../../common/auth/scope.guard.js';
import { ScribeResolver } from '../../common/graphql/scribe-resolver.js';
import { toMessageModel } from '../../common/graphql/message.mapper.js';
import { Message } from '../../common/graphql/models/message.model.js';
import { type Unpiped } from '../../common/validation/validation.pipe.js';
import { ScribeConfig } from '../../config/scribe-config.js';
import { editOf, reasonOf } from './change-inputs.js';
import { EditMessageInput } from './dto/edit-message.input.js';
import { RedactMessageInput } from './dto/redact-message.input.js';
import { MessageEdits } from './message-edits.js';

/** `editMessage` and `redactMessage`: changes of a stored message, in place. */
@ScribeResolver()
export class MessageChangesResolver {
  constructor(
    private readonly edits: MessageEdits,
    private readonly config: ScribeConfig,
  ) {}

  @Mutation(() => Message, {
    description:
      "Edits a stored message's content, metadata or both. It keeps its place and id, its revision moves on by one and editedAt is set; the session's revision moves on too, and messageEvents tells subscribers (EDITED). With expectedRevision, only while the message is still at that revision (REVISION_CONFLICT otherwise, and nothing changes). MESSAGE_HELD for a message this instance holds (QUEUED, BUFFERED) until it is stored, MESSAGE_REDACTED for a redacted one, NOT_FOUND for no such stored message in the session.",
  })
  @RequireScope('append', 'input.sessionId')
  async editMessage(
    @Args('input', { type: () => EditMessageInput, description: 'The message and its changes.' })
    input: Unpiped<EditMessageInput>,
  ): Promise<Message> {
    const edit = editOf(input, this.config.maxMessageBytes);
    const record = await this.edits.edit(
      input.sessionId,
      input.id,
      edit,
      input.expectedRevision ?? undefined,
    );
    return toMessageModel(record);
  }

  @Mutation(() => Message, {
    description:
      "Admin: removes a stored message's content, metadata and tool calls for good, leaving a tombstone in its place (its role, times, redacted: true and the reason). The journal and the set-aside log keep no copy of it afterwards. Its revision and the session's move on, and messageEvents tells subscribers (REDACTED). Redacting a redacted message changes nothing and answers it. MESSAGE_HELD and NOT_FOUND as editMessage.",
  })
  @RequireScope('admin', 'input.sessionId')
  async redactMessage(
    @Args('input', { type: () => RedactMessageInput, description: 'The message, and why.' })
    input: Unpiped<RedactMessageInput>,
  ): Promise<Message> {
    const reason = reasonOf(input);
    return toMessageModel(await this.edits.redact(input.sessionId, input.id, reason));
  }
}
