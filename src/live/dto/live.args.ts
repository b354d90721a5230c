import { ArgsType, Field, ID } from '@nestjs/graphql';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';

@ArgsType()
export class MessageAppendedArgs {
  @Field(() => ID, { description: `The session to follow (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  sessionId: string;

  @Field(() => String, {
    nullable: true,
    description:
      'A message cursor (from a page or an earlier event): first every stored message after it, then the live ones. Without it, only messages committed from now on.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  after?: string | null;
}

@ArgsType()
export class SessionUpdatedArgs {
  @Field(() => ID, { description: `The session to follow (${SESSION_ID_RULE}).` })
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  id: string;
}
