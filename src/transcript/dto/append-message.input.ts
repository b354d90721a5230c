import { Field, ID, InputType } from '@nestjs/graphql';
import { SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { PlainChecked } from '../../common/validation/validation.pipe.js';
import { MessageInput } from './message.input.js';

@PlainChecked()
@InputType({ description: 'A message to append to a session; an unknown session is created.' })
export class AppendMessageInput extends MessageInput {
  @Field(() => ID, { description: `The session to append to (${SESSION_ID_RULE}).` })
  sessionId: string;
}
