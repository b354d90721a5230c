import { Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { GraphQLDateTime } from 'graphql-scalars';
import { FieldScope } from '../../common/auth/field-scope.js';

@FieldScope('admin')
@ObjectType({ description: 'Pending messages of one session on this instance.' })
export class PendingSessionStatus {
  @Field(() => ID, { description: 'The session.' })
  sessionId: string;

  @Field(() => Int, { description: 'Accepted messages held in memory, waiting for the database.' })
  pending: number;

  @Field(() => Int, { description: 'Database writes of this session that failed in a row.' })
  consecutiveFailures: number;

  @Field({
    description:
      'Whether the session has journaled messages that only the disk holds now (past the cap, or found at start).',
  })
  hasSpooledMessages: boolean;
}

@FieldScope('admin')
@ObjectType({ description: 'The pending queues of this instance.' })
export class PendingStatus {
  @Field({ description: 'False while database writes fail.' })
  databaseWritable: boolean;

  @Field(() => String, { nullable: true, description: 'The last database write error.' })
  lastDatabaseError: string | null;

  @Field(() => GraphQLDateTime, { nullable: true, description: 'When the last error happened.' })
  lastDatabaseErrorAt: Date | null;

  @Field(() => Int, {
    description: 'Messages held in memory, all sessions together (journaled or not).',
  })
  totalPending: number;

  @Field(() => [PendingSessionStatus], {
    description: 'Sessions with pending or spooled messages, or failing writes.',
  })
  sessions: PendingSessionStatus[];
}
