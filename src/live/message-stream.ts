import { describeError } from '../common/errors/describe-error.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessageRecord } from '../message/message-record.js';
import { type BoundedFeed } from './bounded-feed.js';

/**
 * Reads what is stored: up to `count` messages of a session after an order key, oldest first
 * (fewer when they are large), and whether more follow.
 */
export type StoredAfter = (
  sessionId: string,
  count: number,
  after: string,
) => Promise<{ items: MessageRecord[]; hasNextPage: boolean }>;

/** Messages read per page while catching up. */
export const REPLAY_PAGE = 200;
/** Ids of the last messages replayed, kept to spot one whose live notice comes in late. */
const REPLAYED_IDS_KEPT = 4 * REPLAY_PAGE;

/**
 * `messageAppended`: what is stored after the client's cursor, then what is committed from
 * then on, with nothing missed and nothing twice at the seam. The live feed is opened first,
 * so every commit from then on is queued; the stored messages are then read page by page.
 * A message can be in both: committed after the feed opened and before a page read it. Each
 * page drops such messages from the live queue, and the ids replayed last are remembered for
 * a notice that arrives after the page that held its message.
 */
export class MessageStream implements AsyncIterableIterator<MessageRecord> {
  private replaying: boolean;
  private cursor: string | undefined;
  private page: MessageRecord[] = [];
  private readonly replayed = new Set<string>();

  constructor(
    private readonly sessionId: string,
    private readonly live: BoundedFeed<MessageRecord>,
    private readonly storedAfter: StoredAfter,
    after: string | undefined,
  ) {
    this.cursor = after;
    this.replaying = after !== undefined;
  }

  async next(): Promise<IteratorResult<MessageRecord>> {
    for (;;) {
      const replayed = this.page.shift();
      if (replayed) return { value: replayed, done: false };
      if (this.replaying && !this.live.isEnded) {
        await this.readPage().catch((error: unknown) => {
          void this.live.return();
          throw new ScribeException(
            ScribeErrorCode.SubscriptionInterrupted,
            `The stored messages could not be read (${describeError(error)}): subscribe again shortly, with the same \`after\``,
          );
        });
        continue;
      }
      // The live feed ended before the replay caught up: what it queued may lie past stored
      // messages not replayed yet, which a client resuming after it would never see.
      if (this.replaying) this.live.discard(() => true);
      const result = await this.live.next();
      if (result.done || !this.replayed.has(result.value.id)) return result;
    }
  }

  return(): Promise<IteratorResult<MessageRecord>> {
    this.page = [];
    this.replaying = false;
    return this.live.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private async readPage(): Promise<void> {
    const { items: page, hasNextPage } = await this.storedAfter(
      this.sessionId,
      REPLAY_PAGE,
      this.cursor as string,
    );
    if (this.live.isEnded) return;
    this.replaying = hasNextPage;
    if (page.length === 0) return;
    this.cursor = page[page.length - 1].orderKey;
    const ids = new Set(page.map((record) => record.id));
    this.live.discard((record) => ids.has(record.id));
    for (const id of ids) {
      this.replayed.add(id);
      if (this.replayed.size > REPLAYED_IDS_KEPT) {
        this.replayed.delete(this.replayed.values().next().value as string);
      }
    }
    this.page = page;
  }
}
