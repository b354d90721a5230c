import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { BoundedFeed } from './bounded-feed.js';
import { MessageStream, REPLAY_PAGE, type StoredAfter } from './message-stream.js';

const SESSION = 'session-1';
const key = (index: number) => String(index).padStart(8, '0');

function message(index: number): MessageRecord {
  return {
    id: `m${index}`,
    sessionId: SESSION,
    orderKey: key(index),
    role: MessageRole.USER,
    content: `message ${index}`,
    clientMessageId: null,
    toolCalls: null,
    toolName: null,
    toolCallId: null,
    metadata: null,
    acceptedAt: index,
  };
}

/** Messages `from` to `to`, both included. */
const messages = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, offset) => message(from + offset));

type Page = Awaited<ReturnType<StoredAfter>>;

/**
 * The stored messages, as pages the test hands out: each read takes the next answer scripted
 * with `holdNextRead` (settled by the test) or `answerNextRead`. A read nobody scripted fails,
 * so a stream that reads once too often ends with SUBSCRIPTION_INTERRUPTED instead of hanging.
 */
class FakeStore {
  readonly reads: [sessionId: string, count: number, after: string][] = [];
  private readonly answers: Deferred<Page>[] = [];

  holdNextRead(): Deferred<Page> {
    const answer = deferred<Page>();
    this.answers.push(answer);
    return answer;
  }

  answerNextRead(items: MessageRecord[], hasNextPage: boolean): void {
    this.holdNextRead().resolve({ items, hasNextPage });
  }

  readonly storedAfter: StoredAfter = (sessionId, count, after) => {
    this.reads.push([sessionId, count, after]);
    const answer = this.answers.shift();
    return answer ? answer.promise : Promise.reject(new Error('a read nobody expected'));
  };
}

/** What a read settles to: the message id, 'done', or the code of the error it failed with. */
async function outcomeOf(read: Promise<IteratorResult<MessageRecord>>): Promise<string> {
  try {
    const result = await read;
    return result.done ? 'done' : result.value.id;
  } catch (error) {
    return `error ${(error as ScribeException).code}`;
  }
}

/** Reads `count` messages, one after the other, as graphql-ws does. */
async function read(sut: MessageStream, count: number): Promise<string[]> {
  const outcomes: string[] = [];
  for (let index = 0; index < count; index++) outcomes.push(await outcomeOf(sut.next()));
  return outcomes;
}

describe(MessageStream.name, () => {
  let store: FakeStore;
  let live: BoundedFeed<MessageRecord>;
  let liveEnds: number;

  const liveFeed = (items = 100) =>
    new BoundedFeed<MessageRecord>(
      { items, bytes: 1_000_000 },
      () => 1,
      () => (liveEnds += 1),
    );
  const streamAfter = (after: string | undefined) =>
    new MessageStream(SESSION, live, store.storedAfter, after);

  beforeEach(() => {
    store = new FakeStore();
    liveEnds = 0;
    live = liveFeed();
  });

  describe('without a cursor', () => {
    it('hands on the live messages only, reading nothing stored', async () => {
      const sut = streamAfter(undefined);
      live.push(message(1));
      live.push(message(2));

      expect(await read(sut, 2)).toEqual(['m1', 'm2']);
      expect(store.reads).toEqual([]);
    });

    it('hands on a live message that comes in while the reader waits', async () => {
      const sut = streamAfter(undefined);
      const next = sut.next();

      live.push(message(1));

      expect(await outcomeOf(next)).toBe('m1');
    });
  });

  describe('replay', () => {
    it('hands on the stored pages after the cursor, each read from where the last ended, then the live messages', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), true);
      store.answerNextRead(messages(3, 3), false);
      live.push(message(4));

      expect(await read(sut, 1)).toEqual(['m1']);
      expect(store.reads).toEqual([[SESSION, REPLAY_PAGE, key(0)]]);
      expect(await read(sut, 1)).toEqual(['m2']);
      // The next page is read only once the last is handed on.
      expect(store.reads).toHaveLength(1);
      expect(await read(sut, 2)).toEqual(['m3', 'm4']);
      expect(store.reads).toEqual([
        [SESSION, REPLAY_PAGE, key(0)],
        [SESSION, REPLAY_PAGE, key(2)],
      ]);
    });

    it('goes live after an empty page', async () => {
      const sut = streamAfter(key(7));
      store.answerNextRead([], false);
      live.push(message(8));

      expect(await read(sut, 1)).toEqual(['m8']);
      expect(store.reads).toEqual([[SESSION, REPLAY_PAGE, key(7)]]);
    });

    it('is its own async iterator', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), false);
      live.push(message(3));
      const ids: string[] = [];

      for await (const record of sut) {
        ids.push(record.id);
        if (record.id === 'm3') live.finish();
      }

      expect(sut[Symbol.asyncIterator]()).toBe(sut);
      expect(ids).toEqual(['m1', 'm2', 'm3']);
    });
  });

  describe('the seam between stored and live', () => {
    it('drops the live messages that the page being read holds, and keeps the others in order', async () => {
      const sut = streamAfter(key(0));
      const page = store.holdNextRead();
      const first = sut.next();
      // Committed after the feed opened: m2 and m3 before the page was read, m4 after.
      live.push(message(2));
      live.push(message(3));
      live.push(message(4));
      page.resolve({ items: messages(1, 3), hasNextPage: false });

      expect(await outcomeOf(first)).toBe('m1');
      live.push(message(5));
      live.finish();
      expect(await read(sut, 5)).toEqual(['m2', 'm3', 'm4', 'm5', 'done']);
      expect(store.reads).toHaveLength(1);
    });

    it('frees the room the page held in the live queue', async () => {
      live = liveFeed(3);
      const sut = streamAfter(key(0));
      const page = store.holdNextRead();
      const first = sut.next();
      for (const index of [1, 2, 3]) live.push(message(index));
      page.resolve({ items: messages(1, 2), hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m1');

      // m3 alone is left queued: two more fit.
      expect(live.push(message(4))).toBe(true);
      expect(live.push(message(5))).toBe(true);
      expect(await read(sut, 4)).toEqual(['m2', 'm3', 'm4', 'm5']);
    });

    it('drops a live message that a later page holds, not only the page being read', async () => {
      const sut = streamAfter(key(0));
      const firstPage = store.holdNextRead();
      const secondPage = store.holdNextRead();
      const first = sut.next();
      live.push(message(2));
      live.push(message(3));
      firstPage.resolve({ items: messages(1, 1), hasNextPage: true });
      expect(await outcomeOf(first)).toBe('m1');

      const second = sut.next();
      live.push(message(4));
      secondPage.resolve({ items: messages(2, 2), hasNextPage: false });

      expect(await outcomeOf(second)).toBe('m2');
      live.finish();
      expect(await read(sut, 3)).toEqual(['m3', 'm4', 'done']);
      expect(store.reads.map(([, , after]) => after)).toEqual([key(0), key(1)]);
    });

    it('skips a live notice that comes in after the page that held its message', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), false);

      expect(await read(sut, 1)).toEqual(['m1']);
      live.push(message(2));
      live.push(message(1));
      live.push(message(3));
      live.finish();

      expect(await read(sut, 3)).toEqual(['m2', 'm3', 'done']);
    });

    it(`remembers the ids of the last ${4 * REPLAY_PAGE} messages replayed, no more`, async () => {
      const sut = streamAfter(key(0));
      for (let page = 0; page < 5; page++) {
        const from = page * REPLAY_PAGE + 1;
        store.answerNextRead(messages(from, from + REPLAY_PAGE - 1), page < 4);
      }
      const replayed = await read(sut, 5 * REPLAY_PAGE);
      expect(replayed).toEqual(messages(1, 5 * REPLAY_PAGE).map((record) => record.id));

      const last = 5 * REPLAY_PAGE;
      const oldestKept = last - 4 * REPLAY_PAGE + 1;
      for (const index of [oldestKept - 1, oldestKept, last, last + 1]) live.push(message(index));
      live.finish();

      // A notice older than that is taken for a new message (one duplicate, never a loss).
      expect(await read(sut, 3)).toEqual([`m${oldestKept - 1}`, `m${last + 1}`, 'done']);
    });
  });

  describe('a read of the stored messages that fails', () => {
    it('ends the stream with SUBSCRIPTION_INTERRUPTED naming the cause, and ends the live feed', async () => {
      const sut = streamAfter(key(0));
      const page = store.holdNextRead();
      const first = sut.next();
      live.push(message(1));

      page.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));

      await expect(first).rejects.toBeInstanceOf(ScribeException);
      await expect(first).rejects.toMatchObject({
        code: ScribeErrorCode.SubscriptionInterrupted,
        message:
          'The stored messages could not be read (ECONNREFUSED: connection refused): subscribe again shortly, with the same `after`',
      });
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
      // What the live feed had queued goes with it.
      expect(await read(sut, 1)).toEqual(['done']);
      expect(live.push(message(2))).toBe(false);
      expect(store.reads).toHaveLength(1);
    });

    it('ends the stream after the pages it handed on when a later page cannot be read', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), true);
      store.holdNextRead().reject(new Error('timeout'));

      expect(await read(sut, 4)).toEqual([
        'm1',
        'm2',
        `error ${ScribeErrorCode.SubscriptionInterrupted}`,
        'done',
      ]);
      expect(live.isEnded).toBe(true);
    });
  });

  describe('a live feed that ends while stored messages are replayed', () => {
    it('hands on the page read, then the live error, reading no further page', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), true);
      expect(await read(sut, 1)).toEqual(['m1']);

      live.fail(new ScribeException(ScribeErrorCode.SlowConsumer, 'too slow'));

      expect(await read(sut, 3)).toEqual(['m2', `error ${ScribeErrorCode.SlowConsumer}`, 'done']);
      expect(store.reads).toHaveLength(1);
    });

    it('hands on the rest of the page, then the error, but none of the live messages queued', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 2), true);
      expect(await read(sut, 1)).toEqual(['m1']);
      // m9 may lie past stored messages not replayed yet: a client told of it would resume
      // after it, and never see those.
      live.push(message(9));

      live.finish(new ScribeException(ScribeErrorCode.SubscriptionInterrupted, 'interrupted'));

      expect(await read(sut, 3)).toEqual([
        'm2',
        `error ${ScribeErrorCode.SubscriptionInterrupted}`,
        'done',
      ]);
      expect(store.reads).toHaveLength(1);
    });

    it('drops a page whose read ends after the live feed did, and tells the live error alone', async () => {
      const sut = streamAfter(key(0));
      const page = store.holdNextRead();
      const first = sut.next();
      live.push(message(9));

      live.finish(new ScribeException(ScribeErrorCode.SubscriptionInterrupted, 'interrupted'));
      page.resolve({ items: messages(1, 2), hasNextPage: true });

      expect(await outcomeOf(first)).toBe(`error ${ScribeErrorCode.SubscriptionInterrupted}`);
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toHaveLength(1);
    });
  });

  describe('return', () => {
    it('while a page is being read: ends the live feed, and the page is never handed on', async () => {
      const sut = streamAfter(key(0));
      const page = store.holdNextRead();
      const first = sut.next();

      expect(await sut.return()).toEqual({ value: undefined, done: true });
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
      page.resolve({ items: messages(1, 2), hasNextPage: true });

      expect(await first).toEqual({ value: undefined, done: true });
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toHaveLength(1);
    });

    it('drops the rest of the page being handed on', async () => {
      const sut = streamAfter(key(0));
      store.answerNextRead(messages(1, 3), true);
      expect(await read(sut, 1)).toEqual(['m1']);

      await sut.return();

      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toHaveLength(1);
    });

    it('ends a live read that is waiting', async () => {
      const sut = streamAfter(undefined);
      const next = sut.next();

      await sut.return();

      expect(await next).toEqual({ value: undefined, done: true });
      expect(liveEnds).toBe(1);
    });
  });
});
