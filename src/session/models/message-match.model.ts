import { Field, ID, Int, ObjectType } from '@nestjs/graphql';
import { FieldScope } from '../../common/auth/field-scope.js';
import { EdgeType, type Edge } from '../../common/pagination/connection.js';
import { PageInfo } from '../../common/pagination/page-info.model.js';
import { Message } from '../../common/graphql/models/message.model.js';

@FieldScope('read')
@ObjectType({
  description: 'Where a match is in a snippet: in UTF-16 code units, as JavaScript strings count.',
})
export class TextRange {
  @Field(() => Int, { description: 'Where the match starts.' })
  start: number;

  @Field(() => Int, { description: 'How long it is.' })
  length: number;
}

@FieldScope('read')
@ObjectType({
  description:
    "The part of a message around its first match, and where the words that match are in it. The text is the message's own (cut at words, with … where text was left out): mark the ranges up yourself, escaping the rest.",
})
export class Snippet {
  @Field({ description: 'The text around the first match.' })
  text: string;

  @Field(() => [TextRange], { description: 'The words that match, in order.' })
  highlights: TextRange[];
}

@FieldScope('read')
@ObjectType({ description: 'A message a search found, with where to open its transcript.' })
export class MessageMatch {
  @Field(() => ID, { description: 'The session the message is in.' })
  sessionId: string;

  @Field(() => Message, { description: 'The message.' })
  message: Message;

  @Field(() => Snippet, { description: 'Its text around the match, the matching words marked.' })
  snippet: Snippet;

  @Field({
    description:
      "The message's cursor in its session: `session(id) { messages(after:) }` or `messages(before:)` with it opens the transcript there.",
  })
  messageCursor: string;
}

export const MessageMatchEdge = EdgeType(MessageMatch, 'MessageMatch');

export interface MessageMatchPage {
  edges: Edge<MessageMatch>[];
  pageInfo: PageInfo;
}

// No totalCount: counting every match costs as much as ranking them all.
@FieldScope('read')
@ObjectType({ description: 'A page of matches, best first.' })
export class MessageMatchConnection implements MessageMatchPage {
  @Field(() => [MessageMatchEdge], { description: 'The matches of this page, best first.' })
  edges: Edge<MessageMatch>[];

  @Field(() => PageInfo, { description: 'Whether more matches follow, and the cursor to them.' })
  pageInfo: PageInfo;
}
