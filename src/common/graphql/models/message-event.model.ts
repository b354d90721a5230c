import { Field, ObjectType, registerEnumType } from '@nestjs/graphql';
import { FieldScope } from '../../auth/field-scope.js';
import { Message } from './message.model.js';

/** What happened to a message, as `messageEvents` tells it. */
export enum MessageEventKind {
  APPENDED = 'APPENDED',
  EDITED = 'EDITED',
  REDACTED = 'REDACTED',
}

registerEnumType(MessageEventKind, {
  name: 'MessageEventKind',
  description: 'What happened to a message.',
  valuesMap: {
    APPENDED: { description: 'It was stored: it takes its place at the end of the transcript.' },
    EDITED: {
      description: 'A stored message was edited (editMessage): replace it where it stands.',
    },
    REDACTED: {
      description:
        'A stored message was redacted (redactMessage): it stays in its place as a tombstone, with no content.',
    },
  },
});

@FieldScope('read')
@ObjectType({
  description:
    "One event of a session's commit order: a message appended, edited or redacted, with the message as the event left it and the cursor to resume after.",
})
export class MessageEvent {
  @Field(() => MessageEventKind, { description: 'What happened to the message.' })
  kind: MessageEventKind;

  @Field({
    description:
      'Resume after this event: `messageEvents(after:)` (or `messageAppended(after:)`, which then skips the edits and redactions).',
  })
  cursor: string;

  @Field(() => Message, {
    description:
      'The message as the event found it: a later state than the event left, never an earlier one, when it changed again before the event was read.',
  })
  node: Message;
}
