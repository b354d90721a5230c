import { Field, ID, InputType } from '@nestjs/graphql';
import { SESSION_ID_RULE } from '../../../common/validation/session-id.js';
import { PlainChecked } from '../../../common/validation/validation.pipe.js';

/** The longest reason a redaction keeps, in characters. */
export const MAX_REASON_CHARACTERS = 512;

@PlainChecked()
@InputType({ description: 'A stored message to redact, and why.' })
export class RedactMessageInput {
  @Field(() => ID, { description: `The message's session (${SESSION_ID_RULE}).` })
  sessionId: string;

  @Field(() => ID, { description: 'The message.' })
  id: string;

  @Field({
    description: `Why, kept on the tombstone for readers (1 to ${MAX_REASON_CHARACTERS} characters): never the content removed.`,
  })
  reason: string;
}
