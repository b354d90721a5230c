import { describeError } from '../common/errors/describe-error.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessagePlace } from '../common/graphql/message.mapper.js';
import { type MessageRecord } from '../message/message-record.js';
import { appendedEvent, type TranscriptEvent } from '../message/transcript-event.js';
import { type BoundedFeed } from './bounded-feed.js';

type StoredPage<T> = { items: T[]; hasNextPage: boolean };

/** What is stored, read for a subscriber catching up. */
export interface ReplaySource {
  /** Up to `count` messages after an order key, in the transcript's order (fewer if large). */
  afterKey(sessionId: string, count: number, key: string): Promise<StoredPage<MessageRecord>>;
  /**
   * Up to `count` events committed after a commit number, in commit order: the messages
   * stored, and the edits and redactions when the stream is told of them.
   */
  afterSeq(sessionId: string, count: number, seq: number): Promise<StoredPage<TranscriptEvent>>;
  /**
   * Up to `count` edits and redactions made after a commit number of messages at or before an
   * order key, in commit order: what a page's cursor missed of the page it came from. Absent
   * for a stream told of appends only.
   */
  changesThrough?(
    sessionId: string,
    count: number,
    seq: number,
    key: string,
  ): Promise<StoredPage<TranscriptEvent>>;
  /** The commit number of the message at `key`, if it is stored with one. */
  seqOf(sessionId: string, key: string): Promise<number | undefined>;
  /** The session's last commit number (its revision); undefined for a session not stored. */
  lastSeq(sessionId: string): Promise<number | undefined>;
}

/**
 * Why the replay stopped, for the client: an outage of the database (DatabaseReadError,
 * DatabaseNotReadyError) is named as one, without the host or path its driver error names;
 * anything else as it is.
 */
function causeOf(error: unknown): string {
  const outage =
    error instanceof ScribeException && error.code === ScribeErrorCode.DatabaseUnavailable;
  return outage ? 'the database cannot be read now' : describeError(error);
}

/** Messages read per page while catching up. */
export const REPLAY_PAGE = 200;
/** Ids of the last messages replayed by key, kept to spot one whose live notice comes in late. */
const REPLAYED_IDS_KEPT = 4 * REPLAY_PAGE;

/**
 * `messageAppended`: what is stored after the client's cursor, then what is committed from
 * then on, with nothing missed and nothing twice at the seam. The live feed is opened first,
 * so every commit from then on is queued; the stored messages are then read page by page.
 *
 * A live event's cursor carries the message's commit number (see the commit-seq migration):
 * after one, the replay reads by commit number, and a live message at or below the last
 * number delivered is one the client has. That is exact whichever instances wrote.
 *
 * A page's cursor carries only the order key. The replay then reads by key; a live message at
 * or below the commit number of the cursor's message was committed before it, so the client's
 * page held it (unless the page listed that message while it was held, not stored: such a
 * cursor says so, and sets no floor); and the ids replayed last are remembered for a notice that arrives after the
 * page that held its message. Exact on one instance; across instances a message accepted
 * before the cursor's but committed after it comes live, late.
 *
 * Told of edits and redactions (messageEvents), a page's cursor replays the messages after it
 * as they now read, then the changes made, since the cursor's message was committed, to the
 * messages at or before it: the client's page may be older than they. A live change of a
 * message replayed is dropped when the replay read it at or after that change.
 */
export class MessageStream implements AsyncIterableIterator<TranscriptEvent> {
  private replaying: boolean;
  private page: TranscriptEvent[] = [];
  /**
   * The messages replayed last, by id: whether by key (so their append is the client's), and
   * the number of the last change they were read at.
   */
  private readonly replayed = new Map<string, { byKey: boolean; changeSeq: number }>();
  /** A page's cursor: the replay by key is done, and the changes at or before it are read. */
  private changesPhase = false;
  /** The cursor's own key, and the number the changes before it are read after. */
  private readonly cursorKey: string | undefined;
  private changeFloor: number | undefined;
  /** Live messages committed at or below this number are the client's already. */
  private floor: number | undefined;
  private key: string | undefined;
  /** A live cursor replays by commit number; a page's by order key. */
  private readonly byNumber: boolean;
  private floorAsked: boolean;
  private checkedFloor = false;

  constructor(
    private readonly sessionId: string,
    private readonly live: BoundedFeed<TranscriptEvent>,
    private readonly source: ReplaySource,
    after: MessagePlace | undefined,
  ) {
    this.replaying = after !== undefined;
    this.key = after?.key;
    this.cursorKey = after?.key;
    this.floor = after?.seq;
    this.byNumber = after?.seq !== undefined;
    // A page's cursor of a message held when it was listed is no place in the commit order:
    // no live message is the client's already, and every change before it is read again.
    this.floorAsked = this.byNumber || after?.held === true;
    if (after?.held === true) this.changeFloor = 0;
  }

  async next(): Promise<IteratorResult<TranscriptEvent>> {
    for (;;) {
      const replayed = this.page.shift();
      if (replayed) return { value: replayed, done: false };
      if (this.replaying && !this.live.isEnded) {
        await this.readPage().catch((error: unknown) => {
          void this.live.return();
          if (error instanceof ScribeException && error.code === ScribeErrorCode.BadUserInput) {
            throw error;
          }
          throw new ScribeException(
            ScribeErrorCode.SubscriptionInterrupted,
            `The stored messages could not be read (${causeOf(error)}): subscribe again shortly, with the same \`after\``,
          );
        });
        continue;
      }
      // The live feed ended before the replay caught up: what it queued may lie past stored
      // messages not replayed yet, which a client resuming after it would never see.
      if (this.replaying) this.live.discard(() => true);
      const result = await this.live.next();
      if (result.done || !this.delivered(result.value)) return result;
    }
  }

  return(): Promise<IteratorResult<TranscriptEvent>> {
    this.page = [];
    this.replaying = false;
    return this.live.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /**
   * Whether the client has `event` already: committed at or below the floor, or a message
   * replayed by key (which read it as it then was, its changes up to then included).
   */
  private delivered(event: TranscriptEvent): boolean {
    const seq = event.seq;
    if (this.floor !== undefined && seq !== undefined && seq <= this.floor) return true;
    const read = this.replayed.get(event.record.id);
    if (read === undefined) return false;
    // A message the changes read (one before the cursor) was not handed on as appended: one
    // committed late, by another instance, still comes live.
    if (event.kind === 'appended') return read.byKey;
    return seq !== undefined && seq <= read.changeSeq;
  }

  private async readPage(): Promise<void> {
    if (this.byNumber && !this.checkedFloor) {
      this.checkedFloor = true;
      await this.refuseFutureFloor();
    }
    if (!this.floorAsked) {
      this.floorAsked = true;
      this.floor = await this.source.seqOf(this.sessionId, this.key as string);
      // A message stored before commit numbers: every change before it, some perhaps twice.
      this.changeFloor = this.floor ?? 0;
      if (this.live.isEnded) return;
    }
    const { items: page, hasNextPage } = this.byNumber
      ? await this.source.afterSeq(this.sessionId, REPLAY_PAGE, this.floor as number)
      : this.changesPhase
        ? await (this.source.changesThrough as NonNullable<ReplaySource['changesThrough']>)(
            this.sessionId,
            REPLAY_PAGE,
            this.changeFloor as number,
            this.cursorKey as string,
          )
        : await this.byKey();
    if (this.live.isEnded) return;
    this.replaying = hasNextPage;
    if (!hasNextPage && !this.byNumber && !this.changesPhase) {
      // The messages after the cursor are read; then the changes before it, when told of them
      // and the cursor's message has a place in the commit order to read them after.
      this.changesPhase = this.source.changesThrough !== undefined;
      this.replaying = this.changesPhase;
    }
    if (page.length === 0) return;
    const last = page[page.length - 1];
    if (this.byNumber) {
      this.floor = last.seq;
    } else {
      if (last.kind === 'appended') this.key = last.record.orderKey;
      else this.changeFloor = last.seq;
      // (The changes read messages at or before the cursor, the replay by key those after it:
      // no message is read by both.)
      for (const { kind, record } of page) {
        this.replayed.delete(record.id);
        this.replayed.set(record.id, {
          byKey: kind === 'appended',
          changeSeq: record.changeSeq ?? 0,
        });
        if (this.replayed.size > REPLAYED_IDS_KEPT) {
          this.replayed.delete(this.replayed.keys().next().value as string);
        }
      }
    }
    this.live.discard((event) => this.delivered(event));
    this.page = page;
  }

  /**
   * A live cursor names a commit number the session has reached: one past it (forged, or of
   * another database) would drop every event to come, silently. BAD_USER_INPUT instead.
   */
  private async refuseFutureFloor(): Promise<void> {
    const last = await this.source.lastSeq(this.sessionId);
    if ((this.floor as number) > (last ?? 0)) {
      throw ScribeException.invalidInput(
        'after',
        "is past the session's last commit: not a cursor this session gave",
      );
    }
  }

  private async byKey(): Promise<StoredPage<TranscriptEvent>> {
    const { items, hasNextPage } = await this.source.afterKey(
      this.sessionId,
      REPLAY_PAGE,
      this.key as string,
    );
    return { items: items.map(appendedEvent), hasNextPage };
  }
}
