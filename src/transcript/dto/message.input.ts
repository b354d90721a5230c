import { Field, InputType } from '@nestjs/graphql';
import { GraphQLJSON } from 'graphql-scalars';
import { MessageRole } from '../../common/graphql/models/message-role.enum.js';

// Checked in plain code by the write path (input-rules.ts), as the append inputs that hold it
// are marked PlainChecked.
@InputType({ description: 'One message to append.' })
export class MessageInput {
  @Field(() => MessageRole, { description: 'Who the message is from.' })
  role: MessageRole;

  @Field({ description: 'The message text (at most MAX_MESSAGE_BYTES bytes of UTF-8).' })
  content: string;

  @Field(() => String, {
    nullable: true,
    description:
      'A client-chosen id, unique within the session. Re-sending an append with the same id returns the message already accepted and stores nothing new.',
  })
  clientMessageId?: string | null;

  @Field(() => String, { nullable: true, description: 'Name of the tool, for tool messages.' })
  toolName?: string | null;

  @Field(() => String, { nullable: true, description: 'Id of the tool call this message answers.' })
  toolCallId?: string | null;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Tool calls the assistant made.' })
  toolCalls?: unknown;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Free-form client metadata.' })
  metadata?: unknown;
}
