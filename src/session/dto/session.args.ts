import { ArgsType, Field, ID } from '@nestjs/graphql';
import { Matches } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';

@ArgsType()
export class SessionArgs {
  @Field(() => ID, { description: `The session id (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  id: string;
}
