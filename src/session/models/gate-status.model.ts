import { Field, Int, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../../common/auth/field-scope.js';

@FieldScope('admin')
@ObjectType({ description: 'The SessionResolveGate of this instance.' })
export class GateStatus {
  @Field(() => Int, { description: 'Full session loads running now.' })
  activeLoads: number;

  @Field(() => Int, { description: 'Full session loads waiting for a slot.' })
  waitingLoads: number;

  @Field(() => Int, { description: 'Sessions being loaded (each shared by all who asked).' })
  inFlight: number;

  @Field(() => Int, { description: 'Sessions in the cache.' })
  cacheSize: number;

  @Field(() => Int, { description: 'How many sessions the cache holds at most.' })
  cacheCapacity: number;

  @Field(() => Int, { description: 'How many full loads may run at once.' })
  concurrency: number;
}
