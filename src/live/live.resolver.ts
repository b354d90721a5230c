import { Args, Subscription } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { RequireScope } from '../common/auth/scope.guard.js';
import { MessageEdge } from '../common/graphql/models/message-connection.model.js';
import { Session } from '../common/graphql/models/session.model.js';
import {
  decodeMessagePlace,
  messageCursor,
  toMessageEvent,
  toMessageModel,
} from '../common/graphql/message.mapper.js';
import { MessageEvent } from '../common/graphql/models/message-event.model.js';
import { toSessionModel } from '../common/graphql/session.mapper.js';
import { type Edge } from '../common/pagination/connection.js';
import { type Message } from '../common/graphql/models/message.model.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { CommitReads } from '../database/commit-reads.js';
import { fromDatabase } from '../database/database-errors.js';
import { SessionQueries } from '../database/session-queries.js';
import { type TranscriptEvent } from '../message/transcript-event.js';
import { type SessionRecord } from '../message/session-record.js';
import { MessageAppendedArgs, SessionUpdatedArgs } from './dto/live.args.js';
import { LiveChannels } from './live-channels.js';
import { MessageStream } from './message-stream.js';

/**
 * The subscriptions whose `resolve` reads the event alone, never the caller or the arguments:
 * one event's result is the same for every subscriber that sent the same document, and
 * SharedExecution executes it once for them all. A field added here must keep to that.
 */
export const EVENT_ONLY_SUBSCRIPTIONS: ReadonlySet<string> = new Set([
  'messageAppended',
  'messageEvents',
]);

@ScribeResolver()
export class LiveResolver {
  constructor(
    private readonly channels: LiveChannels,
    private readonly queries: SessionQueries,
    private readonly commits: CommitReads,
    private readonly config: ScribeConfig,
  ) {}

  @Subscription(() => MessageEdge, {
    description:
      "The session's messages as they are stored, in the order they were committed, each with its cursor. With `after`, first the stored messages after that cursor, then the live ones, with none missed and none twice. Ends with SLOW_CONSUMER when the client falls SUBSCRIPTION_BUFFER messages behind, with SUBSCRIPTION_INTERRUPTED when this instance may have missed commits, and with SERVICE_UNAVAILABLE at shutdown: subscribe again with the last cursor received. Edits and redactions are not told here: see messageEvents.",
    resolve: (event: TranscriptEvent): Edge<Message> => ({
      cursor: messageCursor(event.record),
      node: toMessageModel(event.record),
    }),
  })
  @RequireScope('read', 'sessionId')
  messageAppended(@Args() args: MessageAppendedArgs): AsyncIterableIterator<TranscriptEvent> {
    return this.stream(args, false);
  }

  @Subscription(() => MessageEvent, {
    description:
      "Everything that happens to the session's messages, in the order it was committed: each message appended, and each edit and redaction of a stored one (with the message as that change left it). With `after` (any message cursor), first what was committed after it, then the live events, with none missed and none twice; a message changed more than once since shows its last change only. Ends as messageAppended does: subscribe again with the last cursor received.",
    resolve: (event: TranscriptEvent): MessageEvent => toMessageEvent(event),
  })
  @RequireScope('read', 'sessionId')
  messageEvents(@Args() args: MessageAppendedArgs): AsyncIterableIterator<TranscriptEvent> {
    return this.stream(args, true);
  }

  private stream(args: MessageAppendedArgs, withChanges: boolean): MessageStream {
    // Decoded before the feed opens: a cursor that can never work is BAD_USER_INPUT even while
    // this instance is deaf, never an interruption the client would subscribe again after.
    const after = args.after == null ? undefined : decodeMessagePlace(args.after);
    const maxBytes = this.config.maxPageBytes;
    return new MessageStream(
      args.sessionId,
      this.channels.openMessages(args.sessionId, withChanges),
      // The replay's reads tell an outage from a fault as the API's other reads do.
      {
        afterKey: (sessionId, count, key) =>
          fromDatabase(
            this.queries.pageOfMessages(
              sessionId,
              { direction: 'forward', count, after: key },
              maxBytes,
            ),
          ),
        afterSeq: (sessionId, count, seq) =>
          fromDatabase(this.commits.committedAfter(sessionId, seq, count, maxBytes, withChanges)),
        seqOf: (sessionId, key) => fromDatabase(this.commits.commitSeqOf(sessionId, key)),
        lastSeq: (sessionId) =>
          fromDatabase(this.queries.findMetadata(sessionId).then((session) => session?.revision)),
        ...(withChanges
          ? {
              changesThrough: (sessionId: string, count: number, seq: number, key: string) =>
                fromDatabase(this.commits.changesThrough(sessionId, seq, key, count, maxBytes)),
            }
          : {}),
      },
      after,
    );
  }

  @Subscription(() => Session, {
    description:
      'The session each time its title or metadata changes (updateSession), on any instance. Changes in quick succession may arrive as the latest of them only, and never an older one after a newer (each carries its revision).',
    resolve: (session: SessionRecord): Session => toSessionModel(session),
  })
  @RequireScope('read', 'id')
  sessionUpdated(@Args() args: SessionUpdatedArgs): AsyncIterableIterator<SessionRecord> {
    return this.channels.openSession(args.id);
  }
}
