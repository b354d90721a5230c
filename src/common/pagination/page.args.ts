import { ArgsType, Field, Int } from '@nestjs/graphql';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { ScribeException } from '../errors/scribe.exception.js';
import { type PageRequest } from './page-request.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** The cursor a forward page starts after, shared by both kinds of page arguments. */
@ArgsType()
class AfterArgs {
  @Field(() => String, {
    nullable: true,
    description: 'Return the items after this cursor (an `endCursor` or edge `cursor`).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  after?: string | null;
}

@ArgsType()
export class PageArgs extends AfterArgs {
  @Field(() => Int, {
    defaultValue: DEFAULT_PAGE_SIZE,
    description: `How many items to return: 1 to ${MAX_PAGE_SIZE}, ${DEFAULT_PAGE_SIZE} when omitted.`,
  })
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  first: number = DEFAULT_PAGE_SIZE;
}

/**
 * Relay's arguments both ways: `first` items after `after`, or `last` items before `before`
 * (each 1 to MAX_PAGE_SIZE); `first` is DEFAULT_PAGE_SIZE when neither count is given.
 */
@ArgsType()
export class TwoWayPageArgs extends AfterArgs {
  @Field(() => Int, {
    nullable: true,
    description: `How many items to return from the start: 1 to ${MAX_PAGE_SIZE}; ${DEFAULT_PAGE_SIZE} when neither \`first\` nor \`last\` is given. Not with \`last\`.`,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  first?: number | null;

  @Field(() => Int, {
    nullable: true,
    description: `How many items to return from the end, in the list's order: 1 to ${MAX_PAGE_SIZE}. Not with \`first\`.`,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  last?: number | null;

  @Field(() => String, {
    nullable: true,
    description: 'Return the items before this cursor (a `startCursor` or edge `cursor`).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  before?: string | null;
}

/** The page the arguments ask for, cursors decoded by `decode`; BAD_USER_INPUT for both counts. */
export function pageRequestOf<Key>(
  args: TwoWayPageArgs,
  decode: (cursor: string, argument: 'after' | 'before') => Key,
): PageRequest<Key> {
  const { first, last } = args;
  if (first != null && last != null) {
    throw ScribeException.invalidInput(
      'last',
      'cannot be given with first: page one way at a time',
    );
  }
  return {
    direction: last != null ? 'backward' : 'forward',
    count: last ?? first ?? DEFAULT_PAGE_SIZE,
    ...(args.after != null ? { after: decode(args.after, 'after') } : {}),
    ...(args.before != null ? { before: decode(args.before, 'before') } : {}),
  };
}
