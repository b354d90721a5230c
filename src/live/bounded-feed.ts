import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';

export interface FeedBounds {
  /** Items the reader may fall behind by. */
  readonly items: number;
  /** Their estimated bytes; one item is always let in, whatever its size. */
  readonly bytes: number;
}

/**
 * What one live subscriber has not read yet. The publisher never waits for a reader: it pushes
 * and moves on, so a reader that stops reading (a stalled socket: graphql-ws sends the next
 * event only once the last one is written) would hold ever more memory. Past its bounds the
 * queue is dropped and the reader's next read fails with SLOW_CONSUMER; the publisher learns
 * it from `push` answering false.
 *
 * An async iterator written out, not an async generator: graphql-ws ends a subscription with
 * `return()`, and a generator waiting for its next item would hold that call (and this
 * subscriber's place) until something was published.
 */
export class BoundedFeed<T> implements AsyncIterableIterator<T> {
  private readonly queue: T[] = [];
  private queuedBytes = 0;
  private reader: ((result: IteratorResult<T>) => void) | undefined;
  private failReader: ((error: unknown) => void) | undefined;
  private ended = false;
  private failure: ScribeException | undefined;

  constructor(
    private readonly bounds: FeedBounds,
    private readonly sizeOf: (item: T) => number,
    /** Called once, however the feed ends: the subscriber leaves its channel. */
    private readonly onEnd: () => void,
  ) {}

  /** Hands `item` to the reader; false when the feed has ended (now or before). */
  push(item: T): boolean {
    if (this.ended) return false;
    const reader = this.reader;
    if (reader) {
      this.reader = this.failReader = undefined;
      reader({ value: item, done: false });
      return true;
    }
    const bytes = this.sizeOf(item);
    if (
      this.queue.length >= this.bounds.items ||
      (this.queue.length > 0 && this.queuedBytes + bytes > this.bounds.bytes)
    ) {
      this.fail(
        new ScribeException(
          ScribeErrorCode.SlowConsumer,
          `This subscriber fell more than ${this.queue.length} messages behind and was ended; subscribe again with \`after\` set to the cursor of the last message it received`,
        ),
      );
      return false;
    }
    this.queue.push(item);
    this.queuedBytes += bytes;
    return true;
  }

  /** Ends the feed: the reader gets what is queued, then `error` (or the end). */
  finish(error?: ScribeException): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = error;
    this.onEnd();
    this.settleReader();
  }

  /** Ends the feed at once, dropping what is queued: the reader's next read fails. */
  fail(error: ScribeException): void {
    if (this.ended) return;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.finish(error);
  }

  /** Removes queued items `drop` picks (a replay delivered them already). */
  discard(drop: (item: T) => boolean): void {
    for (let index = this.queue.length - 1; index >= 0; index--) {
      if (drop(this.queue[index])) {
        this.queuedBytes -= this.sizeOf(this.queue[index]);
        this.queue.splice(index, 1);
      }
    }
  }

  get isEnded(): boolean {
    return this.ended;
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.queue.shift();
    if (item !== undefined) {
      this.queuedBytes -= this.sizeOf(item);
      return Promise.resolve({ value: item, done: false });
    }
    if (this.ended) return this.endResult();
    return new Promise((resolve, reject) => {
      this.reader = resolve;
      this.failReader = reject;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.failure = undefined;
    this.finish();
    this.settleReader();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private endResult(): Promise<IteratorResult<T>> {
    const failure = this.failure;
    // The error is told once; after it the feed is simply done.
    this.failure = undefined;
    return failure ? Promise.reject(failure) : Promise.resolve({ value: undefined, done: true });
  }

  private settleReader(): void {
    const reader = this.reader;
    const failReader = this.failReader;
    if (!reader || !failReader) return;
    this.reader = this.failReader = undefined;
    const failure = this.failure;
    this.failure = undefined;
    if (failure) failReader(failure);
    else reader({ value: undefined, done: true });
  }
}
