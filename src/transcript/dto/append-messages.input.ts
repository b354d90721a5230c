import { Field, ID, InputType } from '@nestjs/graphql';
import { SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { PlainChecked } from '../../common/validation/validation.pipe.js';
import { MAX_BATCH_MESSAGES } from '../input-rules.js';
import { MessageInput } from './message.input.js';

@PlainChecked()
@InputType({
  description: 'Several messages to append to one session, stored atomically and in order.',
})
export class AppendMessagesInput {
  @Field(() => ID, { description: `The session to append to (${SESSION_ID_RULE}).` })
  sessionId: string;

  @Field(() => [MessageInput], {
    description: `The messages, in order: 1 to ${MAX_BATCH_MESSAGES}.`,
  })
  messages: MessageInput[];
}
