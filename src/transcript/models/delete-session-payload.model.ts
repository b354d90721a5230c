import { ArgsType, Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { Matches } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { FieldScope } from '../../common/auth/field-scope.js';

@ArgsType()
export class DeleteSessionArgs {
  @Field(() => ID, { description: `The session to delete (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  id: string;
}

@FieldScope('admin')
@ObjectType({ description: 'What deleteSession removed.' })
export class DeleteSessionPayload {
  @Field(() => ID, { description: 'The session that was deleted.' })
  id: string;

  @Field({ description: 'Whether there was anything of the session to delete.' })
  deleted: boolean;

  @Field(() => Int, { description: 'Messages deleted from the database.' })
  storedMessages: number;

  @Field(() => Int, {
    description:
      'Messages this instance held for the database (in memory or in its journal) and dropped. Other instances drop theirs when they hear of the deletion.',
  })
  heldMessages: number;
}
