import { ArgsType, Field, InputType } from '@nestjs/graphql';
import { IsObject, IsOptional } from 'class-validator';
import { GraphQLDateTime } from 'graphql-scalars';
import { PageArgs } from '../../common/pagination/page.args.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { boundedTextProblem } from '../../common/validation/storable-values.js';
import { type SessionFilter as SessionQueryFilter } from '../../database/session-list-queries.js';

export const MAX_TITLE_FILTER_CHARACTERS = 200;

@InputType({ description: 'Which sessions to list; every condition given must hold.' })
export class SessionFilter {
  @Field(() => GraphQLDateTime, {
    nullable: true,
    description: 'Only sessions a message was stored in at or after this time.',
  })
  updatedSince?: Date | null;

  @Field(() => String, {
    nullable: true,
    description: `Only sessions whose title contains this text (1 to ${MAX_TITLE_FILTER_CHARACTERS} characters, matched exactly: case counts).`,
  })
  titleContains?: string | null;
}

@ArgsType()
export class SessionsArgs extends PageArgs {
  @Field(() => SessionFilter, { nullable: true, description: 'Only the sessions that match.' })
  // Its fields are checked by sessionFilterOf, plainly.
  @IsOptional()
  @IsObject()
  filter?: SessionFilter | null;
}

/**
 * The filter as the queries take it, within the sessions whose id starts with `idPrefix` when
 * the caller is limited to those; BAD_USER_INPUT for a title text that cannot match.
 */
export function sessionFilterOf(
  filter: SessionFilter | null | undefined,
  idPrefix?: string,
): SessionQueryFilter {
  const title = filter?.titleContains;
  if (title !== null && title !== undefined) {
    const problem = boundedTextProblem(title, MAX_TITLE_FILTER_CHARACTERS);
    if (problem) throw ScribeException.invalidInput('filter.titleContains', problem);
  }
  const since = filter?.updatedSince;
  return {
    ...(since ? { updatedSince: since.getTime() } : {}),
    ...(title ? { titleContains: title } : {}),
    ...(idPrefix !== undefined ? { idPrefix } : {}),
  };
}
