import { Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { GraphQLDateTime, GraphQLJSON } from 'graphql-scalars';
import { FieldScope } from '../../auth/field-scope.js';
import { ConnectionType } from '../../pagination/connection.js';
import { type MessageRecord } from '../../../message/message-record.js';
import { type HeldMessage } from '../../../message/held-messages.js';

/**
 * What a full load of a session read, for its `messages` field in the same request. A held
 * message stored meanwhile is then in one or both of `messages` and `held`, counted once,
 * never in neither.
 */
export interface LoadedTranscript {
  /** The whole stored transcript, in order-key order. */
  messages: MessageRecord[];
  /** What this instance held of the session just before the load; absent, read by the field. */
  held?: HeldMessage[];
  /** Whether the journal alone held some of its messages then. */
  journaled?: boolean;
}

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

  // Not a @Field, so not in the schema: how a session's `messages` resolver is handed the
  // transcript its `session` query loaded, instead of loading it again. Absent, the field reads
  // its page from the database.
  transcript?: LoadedTranscript;
}

export const SessionConnection = ConnectionType(Session, 'Session');
