import { Field, ObjectType } from '@nestjs/graphql';

@ObjectType({ description: 'Where a page of a connection sits in the whole list.' })
export class PageInfo {
  @Field({ description: 'Whether more items follow this page.' })
  hasNextPage: boolean;

  @Field(() => String, {
    nullable: true,
    description: 'Cursor of the last item of this page; pass it as `after` for the next page.',
  })
  endCursor: string | null;
}
