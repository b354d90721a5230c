import { Field, ID, InputType } from '@nestjs/graphql';
import { Matches } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { MessageInput } from './message.input.js';

@InputType({ description: 'A message to append to a session; an unknown session is created.' })
export class AppendMessageInput extends MessageInput {
  @Field(() => ID, { description: `The session to append to (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  sessionId: string;
}
