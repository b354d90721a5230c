import { Field, ID, InputType, Int } from '@nestjs/graphql';
import { GraphQLJSON } from 'graphql-scalars';
import { SESSION_ID_RULE } from '../../../common/validation/session-id.js';
import { PlainChecked } from '../../../common/validation/validation.pipe.js';

@PlainChecked()
@InputType({
  description:
    'A stored message to edit: its new content, metadata or both (a field left out stays as it is; metadata null clears it).',
})
export class EditMessageInput {
  @Field(() => ID, {
    description: `The message's session (${SESSION_ID_RULE}): the token's scope and session prefix are checked against it before anything is read.`,
  })
  sessionId: string;

  @Field(() => ID, { description: 'The message.' })
  id: string;

  @Field(() => String, {
    nullable: true,
    description: 'The new text (bounded as an append is, MAX_MESSAGE_BYTES).',
  })
  content?: string | null;

  @Field(() => GraphQLJSON, {
    nullable: true,
    description: 'The new free-form metadata, or null for none.',
  })
  metadata?: unknown;

  @Field(() => Int, {
    nullable: true,
    description:
      "The message's revision the edit was made against: when it has moved on since, nothing changes and the answer is REVISION_CONFLICT.",
  })
  expectedRevision?: number | null;
}
