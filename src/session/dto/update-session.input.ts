import { Field, ID, InputType, Int } from '@nestjs/graphql';
import { GraphQLJSON } from 'graphql-scalars';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { boundedTextProblem, jsonProblem } from '../../common/validation/storable-values.js';
import { PlainChecked } from '../../common/validation/validation.pipe.js';
import { type SessionChanges } from '../../database/session-updates.js';

// The title column's width, in characters.
export const MAX_TITLE_CHARACTERS = 512;

@PlainChecked()
@InputType({
  description:
    'New title and metadata for a session; a field left out stays as it is, null clears it.',
})
export class UpdateSessionInput {
  @Field(() => ID, { description: `The session (${SESSION_ID_RULE}).` })
  id: string;

  @Field(() => Int, {
    nullable: true,
    description:
      'The revision the change was made against: when the session has moved on since, nothing changes and the answer is REVISION_CONFLICT.',
  })
  expectedRevision?: number | null;

  @Field(() => String, {
    nullable: true,
    description: `A human-readable title (1 to ${MAX_TITLE_CHARACTERS} characters), or null for none.`,
  })
  title?: string | null;

  @Field(() => GraphQLJSON, {
    nullable: true,
    description: 'Free-form client metadata (bounded as message metadata is), or null for none.',
  })
  metadata?: unknown;
}

/**
 * The changes the input asks for, checked in plain code (the input carries free-form JSON);
 * BAD_USER_INPUT naming the field for what could not be stored as sent, or for no change.
 */
export function sessionChangesOf(
  input: UpdateSessionInput,
  maxMetadataBytes: number,
): SessionChanges {
  if (!SESSION_ID_PATTERN.test(input.id)) {
    throw ScribeException.invalidInput('input.id', `must be ${SESSION_ID_RULE}`);
  }
  const { title, metadata } = input;
  if (title !== undefined && title !== null) {
    const problem = boundedTextProblem(title, MAX_TITLE_CHARACTERS);
    if (problem) throw ScribeException.invalidInput('input.title', problem);
  }
  if (metadata !== undefined && metadata !== null) {
    const problem =
      jsonProblem(metadata) ??
      (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > maxMetadataBytes
        ? `is more than ${maxMetadataBytes} bytes as JSON (MAX_MESSAGE_BYTES)`
        : undefined);
    if (problem) throw ScribeException.invalidInput('input.metadata', problem);
  }
  if (title === undefined && metadata === undefined) {
    throw ScribeException.invalidInput('input', 'must change title, metadata or both');
  }
  return {
    ...(title !== undefined ? { title } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
}
