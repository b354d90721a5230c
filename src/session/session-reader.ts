import { Inject, Injectable, Optional } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { EventEmitter2, OnEvent } from '@nestjs/event-emitter';
import { ScribeConfig } from '../config/scribe-config.js';
import { fromDatabase, writeFailure } from '../database/database-errors.js';
import { SessionQueries } from '../database/session-queries.js';
import {
  SessionListQueries,
  type PageAdmission,
  type SessionFilter,
  type SessionListPage,
  type SessionListPosition,
} from '../database/session-list-queries.js';
import {
  SessionUpdates,
  type SessionChanges,
  type SessionUpdate,
} from '../database/session-updates.js';
import { type MessageRecord } from '../message/message-record.js';
import {
  MessagesStored,
  MessageChanged,
  SessionChanged,
  SessionDeleted,
  WriteFailed,
} from '../message/message-events.js';
import {
  NOTHING_HELD,
  HeldMessages,
  type JournalOnlyMessages,
  type HeldMessage,
} from '../message/held-messages.js';
import { recordBytes, type FullSession, type SessionRecord } from '../message/session-record.js';
import { pageOfList, type Page, type PageRequest } from '../common/pagination/page-request.js';
import { SessionResolveGate, type SessionResolveGateStatus } from './session-resolve-gate.js';

/**
 * What the API reads sessions through: full loads go through the SessionResolveGate
 * (cached, single-flight, bounded); metadata and pages go straight to the database. An
 * outage of the database is told apart from a fault here, for every read (fromDatabase).
 */
@Injectable()
export class SessionReader {
  private readonly turns = new WeakMap<object, Mutex>();
  private readonly maxPageBytes: number;
  private readonly held: HeldMessages;

  constructor(
    private readonly queries: SessionQueries,
    config: ScribeConfig,
    private readonly gate: SessionResolveGate,
    private readonly events: EventEmitter2,
    // Optional: SessionModule imports alone (issue 20), without the write path that holds them.
    @Optional() @Inject(HeldMessages) held: HeldMessages | null,
    private readonly updates: SessionUpdates,
    private readonly lists: SessionListQueries,
  ) {
    this.maxPageBytes = config.maxPageBytes;
    this.held = held ?? NOTHING_HELD;
  }

  /** What this instance accepted for the session and holds until the database takes it. */
  heldOf(id: string): HeldMessage[] {
    return this.held.of(id);
  }

  /** Whether some of the session's accepted messages are in this instance's journal only. */
  inJournalOnly(id: string): boolean {
    return this.held.inJournalOnly(id);
  }

  /**
   * The session's journal-only messages a page of `request` may list, read back from disk: at
   * most the page's count and MAX_PAGE_BYTES of them, so that a read stays bounded.
   */
  journalOnly(id: string, request: PageRequest<string>): Promise<JournalOnlyMessages> {
    return this.held.journalOnly(id, request, this.maxPageBytes);
  }

  /**
   * What this instance holds of the session, in memory and (for a page of `request`) in the
   * journal only, with how many of its messages are stored, as of one moment: read while none
   * of its held messages moves, so that none is counted both stored and held, or neither.
   */
  heldWithJournal(
    id: string,
    request: PageRequest<string>,
  ): Promise<{ held: HeldMessage[]; journal: JournalOnlyMessages; stored: number }> {
    return this.held.atOneMoment(id, async () => {
      const stored = await this.storedCount(id);
      const journal = await this.journalOnly(id, request);
      return { held: this.held.of(id), journal, stored };
    });
  }

  metadata(id: string): Promise<SessionRecord | null> {
    return this.gate.resolveMetadata(id);
  }

  /**
   * A full session through the gate. The full reads of one `requester` (a request) run one at
   * a time: however many sessions it names, it holds at most one load slot, and its loads
   * queue behind each other, never in front of other requests'.
   */
  full(id: string, signal?: AbortSignal, requester?: object): Promise<FullSession | null> {
    if (!requester) return this.gate.resolveFull(id, signal);
    let turn = this.turns.get(requester);
    if (!turn) {
      turn = new Mutex();
      this.turns.set(requester, turn);
    }
    return turn.runExclusive(() => this.gate.resolveFull(id, signal));
  }

  /** A page of the session list, bounded by MAX_PAGE_BYTES; `admit` hears its bytes first. */
  list(
    first: number,
    after: SessionListPosition | undefined,
    filter: SessionFilter,
    admit?: PageAdmission,
  ): Promise<SessionListPage> {
    return fromDatabase(this.lists.listSessions(first, after, filter, this.maxPageBytes, admit));
  }

  /** Whether any session the filter keeps stands at or before `position` in the list. */
  anySessionAtOrBefore(position: SessionListPosition, filter?: SessionFilter): Promise<boolean> {
    return fromDatabase(this.lists.anySessionAtOrBefore(position, filter));
  }

  count(filter?: SessionFilter): Promise<number> {
    return fromDatabase(this.lists.countSessions(filter));
  }

  private async storedCount(id: string): Promise<number> {
    return (await fromDatabase(this.queries.findMetadata(id)))?.messageCount ?? 0;
  }

  /** A page of a session straight from the database, bounded by MAX_PAGE_BYTES. */
  messagePage(
    sessionId: string,
    request: PageRequest<string>,
    admit?: PageAdmission,
  ): Promise<Page<MessageRecord>> {
    return fromDatabase(this.queries.pageOfMessages(sessionId, request, this.maxPageBytes, admit));
  }

  /** A page of a transcript already in memory, bounded as a page from the database is. */
  transcriptPage(
    transcript: readonly MessageRecord[],
    request: PageRequest<string>,
  ): Page<MessageRecord> {
    return pageOfList(
      transcript,
      request,
      (message) => message.orderKey,
      this.maxPageBytes,
      recordBytes,
    );
  }

  /**
   * Changes a session's title and metadata (see SessionQueries.updateSession). Its cached copy
   * is dropped whatever the outcome: the next read loads what the database holds. A change
   * is announced (SessionChanged) for live subscribers.
   */
  async update(
    id: string,
    changes: SessionChanges,
    expectedRevision?: number,
  ): Promise<SessionUpdate> {
    let outcome: SessionUpdate;
    try {
      outcome = await this.updates.updateSession(id, changes, expectedRevision);
    } catch (error) {
      // A connection lost as the change committed may have made it: the client is told so.
      throw writeFailure(
        error,
        `The database cannot be reached now, so session ${JSON.stringify(id)} was not updated (unless the connection dropped as it committed: read its revision, or retry with expectedRevision)`,
      );
    } finally {
      this.gate.evict(id);
    }
    if (outcome.kind === 'updated') {
      this.events.emit(SessionChanged.event, new SessionChanged(outcome.session));
    }
    return outcome;
  }

  /** A session changed elsewhere in this process (an import restored it): read it afresh. */
  @OnEvent(SessionChanged.event)
  onSessionChanged(event: SessionChanged): void {
    this.gate.evict(event.session.id);
  }

  /**
   * A message of the session was edited or redacted here: its cached copy goes at once (a read
   * would see the revision moved on, and reload, but a redacted text must not stay in memory).
   */
  @OnEvent(MessageChanged.event)
  onMessageChanged(event: MessageChanged): void {
    this.gate.evict(event.record.sessionId);
  }

  /** Write-through from the write path: keeps a cached copy current after a write. */
  @OnEvent(MessagesStored.event)
  onMessagesStored(event: MessagesStored): void {
    this.gate.applyStored(event.sessionId, event.messages, event.revision, Date.now());
  }

  /** A deleted session (here or elsewhere) must not be read from the cache. */
  @OnEvent(SessionDeleted.event)
  onSessionDeleted(event: SessionDeleted): void {
    this.gate.evict(event.sessionId);
  }

  // A load that ran while a write was under way may have read before it committed; once the
  // write failed, no copy read meanwhile may be kept.
  @OnEvent(WriteFailed.event)
  onWriteFailed(event: WriteFailed): void {
    this.gate.evict(event.sessionId);
  }

  gateStatus(): SessionResolveGateStatus {
    return this.gate.status();
  }
}
