import { OnEvent } from '@nestjs/event-emitter';
import { MessageChanged, MessagesStored, SessionChanged } from '../message/message-events.js';
import { type MessageRecord } from '../message/message-record.js';
import { type SessionRecord } from '../message/session-record.js';

/** Who hears of commits: the live subscriptions of this instance. */
export interface CommitListener {
  /** Whether anyone here follows the session: a notice of one nobody follows is not read. */
  follows(sessionId: string): boolean;
  /** Messages of a session newly committed, in the order they were committed. */
  messages(sessionId: string, records: MessageRecord[]): void;
  /** A stored message was edited or redacted: `record` as that change left it. */
  messageChanged(record: MessageRecord): void;
  sessionChanged(session: SessionRecord): void;
  /** Commits may have gone unheard: whoever follows a session must start again. */
  interrupted(reason: string): void;
}

/**
 * Commits made by every instance that shares the database, as they happen. With SQLite only
 * this process writes, and its own events say it all; PostgreSQL's feed listens for the notices
 * every instance's writes send (postgres-commit-feed.ts).
 */
export abstract class CommitFeed {
  protected listener: CommitListener | undefined;

  listen(listener: CommitListener): void {
    this.listener = listener;
  }

  /** Whether commits are heard right now; a subscription begun while not would miss some. */
  abstract get live(): boolean;
}

/** The feed of a database only this process writes to. */
export class InProcessCommitFeed extends CommitFeed {
  get live(): boolean {
    return true;
  }

  @OnEvent(MessagesStored.event)
  onMessagesStored(event: MessagesStored): void {
    if (event.messages.length > 0) this.listener?.messages(event.sessionId, event.messages);
  }

  @OnEvent(MessageChanged.event)
  onMessageChanged(event: MessageChanged): void {
    this.listener?.messageChanged(event.record);
  }

  @OnEvent(SessionChanged.event)
  onSessionChanged(event: SessionChanged): void {
    this.listener?.sessionChanged(event.session);
  }
}
