import { ArgsType, Field, Int } from '@nestjs/graphql';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

@ArgsType()
export class PageArgs {
  @Field(() => Int, {
    defaultValue: DEFAULT_PAGE_SIZE,
    description: `How many items to return: 1 to ${MAX_PAGE_SIZE}, ${DEFAULT_PAGE_SIZE} when omitted.`,
  })
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  first: number = DEFAULT_PAGE_SIZE;

  @Field(() => String, {
    nullable: true,
    description: 'Return the items after this cursor (an `endCursor` or edge `cursor`).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  after?: string | null;
}
