import { Field, ID, InputType } from '@nestjs/graphql';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, Matches, ValidateNested } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { MessageInput } from './message.input.js';

export const MAX_BATCH_MESSAGES = 1000;

@InputType({
  description: 'Several messages to append to one session, stored atomically and in order.',
})
export class AppendMessagesInput {
  @Field(() => ID, { description: `The session to append to (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  sessionId: string;

  @Field(() => [MessageInput], {
    description: `The messages, in order: 1 to ${MAX_BATCH_MESSAGES}.`,
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH_MESSAGES)
  @ValidateNested({ each: true })
  @Type(() => MessageInput)
  messages: MessageInput[];
}
