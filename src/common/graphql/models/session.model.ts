import { Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { GraphQLDateTime, GraphQLJSON } from 'graphql-scalars';
import { FieldScope } from '../../auth/field-scope.js';
import { ConnectionType } from '../../pagination/connection.js';

// All that is stored of a session needs `read`, wherever a Session is answered; its id is
// what the caller named.
@FieldScope('read')
@ObjectType({
  description: 'A chat session: its metadata and, through `messages`, its transcript.',
})
export class Session {
  @FieldScope('public')
  @Field(() => ID, { description: 'The client-chosen session id.' })
  id: string;

  @Field(() => String, { nullable: true, description: 'Optional human-readable title.' })
  title: string | null;

  @Field(() => GraphQLJSON, {
    nullable: true,
    description: 'Free-form client metadata, as updateSession set it.',
  })
  metadata: unknown;

  @Field(() => GraphQLDateTime, {
    description: 'When the first message of the session was accepted.',
  })
  createdAt: Date;

  @Field(() => GraphQLDateTime, { description: 'When a message of the session was last stored.' })
  updatedAt: Date;

  @Field(() => Int, { description: 'How many messages are stored.' })
  messageCount: number;

  @Field(() => Int, {
    description:
      'Grows by one with every stored message and every updateSession; a changed revision means the session changed.',
  })
  revision: number;
}

export const SessionConnection = ConnectionType(Session, 'Session');
