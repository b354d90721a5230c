import { Field, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../../common/auth/field-scope.js';
import '../../common/graphql/models/append-status.enum.js';
import { AppendStatus } from '../../message/append-status.js';
import { Message } from '../../common/graphql/models/message.model.js';

// The append's own outcome; the Message's fields declare their own scopes.
@FieldScope('public')
@ObjectType({ description: 'The result of appendMessage.' })
export class AppendMessagePayload {
  @Field(() => Message, { description: 'The accepted message, with its server-assigned id.' })
  message: Message;

  @Field(() => AppendStatus, { description: 'Whether it is stored yet or held until it can be.' })
  status: AppendStatus;
}

@FieldScope('public')
@ObjectType({ description: 'The result of appendMessages.' })
export class AppendMessagesPayload {
  @Field(() => [Message], { description: 'The accepted messages, in order.' })
  messages: Message[];

  @Field(() => AppendStatus, {
    description: 'Whether they are stored yet or held until they can be.',
  })
  status: AppendStatus;
}
