import { Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { GraphQLDateTime, GraphQLJSON } from 'graphql-scalars';
import { FieldScope } from '../../auth/field-scope.js';
import { AppendStatus } from '../../../message/append-status.js';
import './append-status.enum.js';
import { MessageRole } from '../../../message/message-role.js';
import './message-role.enum.js';

// What a message says and when it was accepted needs `read`, in an append's answer too: a
// retry answers the message first accepted. Its id (derived from the session and the
// clientMessageId), session and status are the append's own outcome.
@FieldScope('read')
@ObjectType({ description: 'One message of a session transcript.' })
export class Message {
  @FieldScope('public')
  @Field(() => ID, {
    description: 'Server-assigned id (a UUID), given when the append was accepted.',
  })
  id: string;

  @FieldScope('public')
  @Field(() => ID, { description: 'The session the message belongs to.' })
  sessionId: string;

  @FieldScope('public')
  @Field(() => AppendStatus, {
    description:
      'PERSISTED once stored. QUEUED or BUFFERED for a message this instance accepted and holds until the database takes it: a read on that instance shows it in its accepted place; other instances see it once it is stored.',
  })
  status: AppendStatus;

  @Field(() => MessageRole, { description: 'Who the message is from.' })
  role: MessageRole;

  @Field({ description: 'The message text.' })
  content: string;

  @Field(() => String, {
    nullable: true,
    description: 'The id the client gave the message, unique within its session.',
  })
  clientMessageId: string | null;

  @Field(() => String, { nullable: true, description: 'Name of the tool, for tool messages.' })
  toolName: string | null;

  @Field(() => String, { nullable: true, description: 'Id of the tool call this message answers.' })
  toolCallId: string | null;

  @Field(() => GraphQLJSON, {
    nullable: true,
    description: 'Tool calls the assistant made, as sent.',
  })
  toolCalls: unknown;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Free-form client metadata, as sent.' })
  metadata: unknown;

  @Field(() => GraphQLDateTime, {
    description:
      "When the message was written: when its append was accepted, or for an imported message the time its file gave (kept as it was; the order is the import's).",
  })
  createdAt: Date;

  @Field(() => Int, {
    description:
      "The message's own revision: 1 as appended, one more for each edit or redaction. editMessage's expectedRevision is checked against it.",
  })
  revision: number;

  @Field(() => GraphQLDateTime, {
    nullable: true,
    description: 'When it was last edited (editMessage); null if it never was.',
  })
  editedAt: Date | null;

  @Field({
    description:
      'Whether its content was removed for good (redactMessage): content is empty, metadata and toolCalls null, and it keeps its place, role and times.',
  })
  redacted: boolean;

  @Field(() => GraphQLDateTime, {
    nullable: true,
    description: 'When it was redacted; null if it was not.',
  })
  redactedAt: Date | null;

  @Field(() => String, {
    nullable: true,
    description: 'Why it was redacted, as the redaction said.',
  })
  redactionReason: string | null;
}
