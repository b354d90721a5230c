import { Field, ID, InputType } from '@nestjs/graphql';
import { Matches } from 'class-validator';

/** What spoolStatus's setAside ids look like (setAsideIdOf). */
const SET_ASIDE_ID_PATTERN = /^[0-9a-f]{16}$/;

@InputType({ description: 'One entry of the set-aside log to act on.' })
export class SetAsideActionInput {
  @Field(() => ID, {
    description: "The entry, as spoolStatus's setAside lists it (its id: 16 hex digits).",
  })
  @Matches(SET_ASIDE_ID_PATTERN, { message: 'must be a set-aside id (16 hex digits)' })
  id: string;
}
