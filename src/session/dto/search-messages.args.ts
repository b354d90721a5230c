import { ArgsType, Field, ID, Int } from '@nestjs/graphql';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../../common/validation/session-id.js';
import { MAX_SEARCH_QUERY_CHARACTERS } from '../search-query.js';

export const DEFAULT_SEARCH_PAGE = 20;
export const MAX_SEARCH_PAGE = 100;

@ArgsType()
export class SearchMessagesArgs {
  @Field({
    description: `What to find (1 to ${MAX_SEARCH_QUERY_CHARACTERS} characters): words, all of which must match; "a quoted phrase", its words in that order; \`word*\` for words that start with it. Case and accents do not count. Nothing else is an operator: AND, OR, NOT and NEAR are words like any other; parentheses, -, : and ^ separate words, as punctuation does.`,
  })
  // Its words are checked by parseSearchQuery; this bounds what is read of it first.
  @IsString()
  @MaxLength(MAX_SEARCH_QUERY_CHARACTERS * 2)
  query: string;

  @Field(() => ID, {
    nullable: true,
    description: `Only this session's messages (${SESSION_ID_RULE}); every session the caller may read when omitted.`,
  })
  @IsOptional()
  @Matches(SESSION_ID_PATTERN, { message: `must be ${SESSION_ID_RULE}` })
  sessionId?: string | null;

  @Field(() => Int, {
    defaultValue: DEFAULT_SEARCH_PAGE,
    description: `How many matches to return: 1 to ${MAX_SEARCH_PAGE}, ${DEFAULT_SEARCH_PAGE} when omitted.`,
  })
  @IsInt()
  @Min(1)
  @Max(MAX_SEARCH_PAGE)
  first: number = DEFAULT_SEARCH_PAGE;

  @Field(() => String, {
    nullable: true,
    description: 'Return the matches after this cursor (an `endCursor` of this search).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  after?: string | null;
}
