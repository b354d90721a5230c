import { Field, InputType } from '@nestjs/graphql';
import { Allow, IsEnum, IsOptional, IsString } from 'class-validator';
import { GraphQLJSON } from 'graphql-scalars';
import '../../common/graphql/models/message-role.enum.js';
import { MessageRole } from '../../message/message-role.js';

// Over GraphQL, checked in plain code by the write path (input-rules.ts), as the append inputs
// that hold it are marked PlainChecked, after GraphQL checked its types. The class-validator
// rules stand for those types where a host calls TranscriptService.append directly
// (message-shapes.ts); they never walk the free-form JSON.
@InputType({ description: 'One message to append.' })
export class MessageInput {
  @Field(() => MessageRole, { description: 'Who the message is from.' })
  @IsEnum(MessageRole)
  role: MessageRole;

  @Field({ description: 'The message text (at most MAX_MESSAGE_BYTES bytes of UTF-8).' })
  @IsString()
  content: string;

  @Field(() => String, {
    nullable: true,
    description:
      'A client-chosen id, unique within the session. Re-sending an append with the same id returns the message already accepted and stores nothing new.',
  })
  @IsOptional()
  @IsString()
  clientMessageId?: string | null;

  @Field(() => String, { nullable: true, description: 'Name of the tool, for tool messages.' })
  @IsOptional()
  @IsString()
  toolName?: string | null;

  @Field(() => String, { nullable: true, description: 'Id of the tool call this message answers.' })
  @IsOptional()
  @IsString()
  toolCallId?: string | null;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Tool calls the assistant made.' })
  @Allow()
  toolCalls?: unknown;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Free-form client metadata.' })
  @Allow()
  metadata?: unknown;
}
