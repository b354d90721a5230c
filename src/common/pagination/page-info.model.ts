import { Field, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../auth/field-scope.js';

@FieldScope('read')
@ObjectType({ description: 'Where a page of a connection sits in the whole list.' })
export class PageInfo {
  @Field({
    description:
      'Whether items follow this page: paging forward (`first`), whether more come after it; paging backward from `before`, whether anything lies at or after that cursor.',
  })
  hasNextPage: boolean;

  @Field({
    description:
      'Whether items precede this page: paging backward (`last`), whether more come before it; paging forward from `after`, whether anything lies at or before that cursor.',
  })
  hasPreviousPage: boolean;

  @Field(() => String, {
    nullable: true,
    description: 'Cursor of the first item of this page; pass it as `before` for the page before.',
  })
  startCursor: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'Cursor of the last item of this page; pass it as `after` for the next page.',
  })
  endCursor: string | null;
}
