import { Field, ID, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../../common/auth/field-scope.js';

@FieldScope('admin')
@ObjectType({ description: 'The set-aside entry that was re-driven or dropped.' })
export class SetAsideActionPayload {
  @Field(() => ID, { description: 'The entry.' })
  id: string;

  @Field({ description: 'Why it had been set aside.' })
  reason: string;

  @Field(() => ID, { nullable: true, description: 'Its session, when it held a readable record.' })
  sessionId: string | null;

  @Field(() => ID, {
    nullable: true,
    description: 'Its message id, when it held a readable record.',
  })
  messageId: string | null;
}
