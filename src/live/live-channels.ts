import { Injectable, type OnModuleInit } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { SessionDeleted } from '../message/message-events.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type SubscriptionSettings, ScribeConfig } from '../config/scribe-config.js';
import { CommitFeed, type CommitListener } from '../database/commit-feed.js';
import { type MessageRecord } from '../message/message-record.js';
import { recordBytes, type SessionRecord } from '../message/session-record.js';
import { appendedEvent, changedEvent, type TranscriptEvent } from '../message/transcript-event.js';
import { BoundedFeed } from './bounded-feed.js';

type Channels<T> = Map<string, Set<BoundedFeed<T>>>;

// A session's metadata is small next to a message: counted as one of its own size estimate.
const sessionBytes = (session: SessionRecord) =>
  Buffer.byteLength(JSON.stringify(session.metadata ?? null)) + (session.title?.length ?? 0) * 2;

const eventBytes = (event: TranscriptEvent) => recordBytes(event.record);

/**
 * The live subscribers of this instance, by session: hands each what the commit feed hears,
 * without ever waiting for one (see BoundedFeed). At most MAX_SUBSCRIPTIONS are open at once;
 * none is opened while the feed is deaf, since it would miss what is committed meanwhile.
 */
@Injectable()
export class LiveChannels implements CommitListener, OnModuleInit {
  private readonly messageChannels: Channels<TranscriptEvent> = new Map();
  /** The feeds of messageChannels that are told of edits and redactions too. */
  private readonly changeFeeds = new WeakSet<BoundedFeed<TranscriptEvent>>();
  private readonly sessionChannels: Channels<SessionRecord> = new Map();
  /** The last revision each followed session was sent at. */
  private readonly sessionRevisions = new Map<string, number>();
  private readonly settings: SubscriptionSettings;
  private open = 0;
  private closed: ScribeException | undefined;

  constructor(
    private readonly feed: CommitFeed,
    config: ScribeConfig,
  ) {
    this.settings = config.subscriptions;
  }

  onModuleInit(): void {
    this.feed.listen(this);
  }

  get openCount(): number {
    return this.open;
  }

  /**
   * A feed of the messages `sessionId` commits from now on and, `withChanges`, of the edits and
   * redactions of its messages, in the order they were committed.
   */
  openMessages(sessionId: string, withChanges = false): BoundedFeed<TranscriptEvent> {
    const feed = this.openFeed(this.messageChannels, sessionId, eventBytes);
    if (withChanges) this.changeFeeds.add(feed);
    return feed;
  }

  /** A feed of the session's changes of title and metadata from now on. */
  openSession(sessionId: string): BoundedFeed<SessionRecord> {
    return this.openFeed(this.sessionChannels, sessionId, sessionBytes);
  }

  follows(sessionId: string): boolean {
    return this.messageChannels.has(sessionId) || this.sessionChannels.has(sessionId);
  }

  messages(sessionId: string, records: MessageRecord[]): void {
    // Every commit comes here, followed or not: nothing is allocated for one nobody follows.
    const feeds = this.messageChannels.get(sessionId);
    if (!feeds) return;
    const events = records.map(appendedEvent);
    for (const feed of [...feeds]) {
      for (const event of events) if (!feed.push(event)) break;
    }
  }

  messageChanged(record: MessageRecord): void {
    const feeds = this.messageChannels.get(record.sessionId);
    if (!feeds) return;
    const event = changedEvent(record);
    for (const feed of [...feeds]) if (this.changeFeeds.has(feed)) feed.push(event);
  }

  /**
   * A notice is read when it is handled, so two changes in quick succession may both read the
   * later one: each subscriber gets a revision once, never an older one after a newer.
   */
  sessionChanged(session: SessionRecord): void {
    const feeds = this.sessionChannels.get(session.id);
    if (!feeds) return;
    if (session.revision <= (this.sessionRevisions.get(session.id) ?? -1)) return;
    this.sessionRevisions.set(session.id, session.revision);
    for (const feed of [...feeds]) feed.push(session);
  }

  interrupted(reason: string): void {
    this.finishAll(
      new ScribeException(
        ScribeErrorCode.SubscriptionInterrupted,
        `Live updates were interrupted (${reason}): subscribe again, with \`after\` set to the cursor of the last message received`,
      ),
    );
  }

  /** A deleted session's subscribers are told, and their subscriptions end. */
  @OnEvent(SessionDeleted.event)
  onSessionDeleted(event: SessionDeleted): void {
    const error = new ScribeException(
      ScribeErrorCode.SessionDeleted,
      `Session ${event.sessionId} was deleted`,
    );
    for (const channels of [this.messageChannels, this.sessionChannels] as Channels<unknown>[]) {
      for (const feed of [...(channels.get(event.sessionId) ?? [])]) feed.fail(error);
    }
  }

  /** Ends every subscription with `error`, and refuses new ones from now on (a shutdown). */
  close(error: ScribeException): void {
    this.closed = error;
    this.finishAll(error);
  }

  private finishAll(error: ScribeException): void {
    for (const channels of [this.messageChannels, this.sessionChannels] as Channels<unknown>[]) {
      for (const feeds of [...channels.values()]) {
        for (const feed of [...feeds]) feed.finish(error);
      }
    }
  }

  private openFeed<T>(
    channels: Channels<T>,
    sessionId: string,
    sizeOf: (item: T) => number,
  ): BoundedFeed<T> {
    if (this.closed) throw this.closed;
    if (!this.feed.live) {
      throw new ScribeException(
        ScribeErrorCode.SubscriptionInterrupted,
        'Live updates are unavailable while the database cannot be reached; try again shortly',
      );
    }
    if (this.open >= this.settings.maxSubscriptions) {
      throw new ScribeException(
        ScribeErrorCode.TooManySubscriptions,
        `This instance holds its most subscriptions (${this.settings.maxSubscriptions}, MAX_SUBSCRIPTIONS); try again later`,
      );
    }
    let feeds = channels.get(sessionId);
    if (!feeds) channels.set(sessionId, (feeds = new Set()));
    const members = feeds;
    const feed = new BoundedFeed<T>(
      { items: this.settings.bufferMessages, bytes: this.settings.bufferBytes },
      sizeOf,
      () => {
        this.open -= 1;
        members.delete(feed);
        if (members.size === 0 && channels.get(sessionId) === members) {
          channels.delete(sessionId);
          if (!this.sessionChannels.has(sessionId)) this.sessionRevisions.delete(sessionId);
        }
      },
    );
    members.add(feed);
    this.open += 1;
    return feed;
  }
}
