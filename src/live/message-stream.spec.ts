import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { DatabaseReadError } from '../database/database-errors.js';
import { DatabaseNotReadyError } from '../database/database-readiness.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessagePlace } from '../common/graphql/message.mapper.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { BoundedFeed } from './bounded-feed.js';
import { MessageStream, REPLAY_PAGE, type ReplaySource } from './message-stream.js';

const SESSION = 'session-1';
const key = (index: number) => String(index).padStart(8, '0');

/** Message `index`, committed as number `commitSeq` when given. */
function message(index: number, commitSeq?: number | null): MessageRecord {
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
    commitSeq,
  };
}

/** Messages `from` to `to`, both included. */
const messages = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, offset) => message(from + offset));

/** A page's cursor: the order key of message `index`. */
const pageCursor = (index: number): MessagePlace => ({ key: key(index) });
/** A live event's cursor: message `index`, committed as number `seq`. */
const liveCursor = (index: number, seq: number): MessagePlace => ({ key: key(index), seq });

type Page = Awaited<ReturnType<ReplaySource['afterKey']>>;
type Read = [by: 'key' | 'seq', sessionId: string, count: number, after: string | number];

/**
 * The stored messages, as pages the test hands out: each read (by key or by number) takes the
 * next answer scripted with `holdNextRead` (settled by the test) or `answerNextRead`. A read
 * nobody scripted fails, so a stream that reads once too often ends with SUBSCRIPTION_INTERRUPTED
 * instead of hanging. The cursor's commit number is what `holdSeqOf` / `answerSeqOf` script;
 * unscripted, the cursor's message was stored without one (before the commit-seq migration).
 */
class FakeStore implements ReplaySource {
  readonly reads: Read[] = [];
  readonly seqAsks: [sessionId: string, key: string][] = [];
  private readonly pages: Deferred<Page>[] = [];
  private readonly seqs: Deferred<number | undefined>[] = [];
  private readonly readWaiters: { count: number; asked: Deferred }[] = [];

  holdNextRead(): Deferred<Page> {
    const answer = deferred<Page>();
    this.pages.push(answer);
    return answer;
  }

  answerNextRead(items: MessageRecord[], hasNextPage: boolean): void {
    this.holdNextRead().resolve({ items, hasNextPage });
  }

  holdSeqOf(): Deferred<number | undefined> {
    const answer = deferred<number | undefined>();
    this.seqs.push(answer);
    return answer;
  }

  answerSeqOf(seq: number | undefined): void {
    this.holdSeqOf().resolve(seq);
  }

  /** Settles once `count` reads have been asked for (by key, after the commit number). */
  readsAsked(count: number): Promise<void> {
    const asked = deferred();
    this.readWaiters.push({ count, asked });
    this.wakeReadWaiters();
    return asked.promise;
  }

  afterKey(sessionId: string, count: number, after: string): Promise<Page> {
    return this.read(['key', sessionId, count, after]);
  }

  afterSeq(sessionId: string, count: number, after: number): Promise<Page> {
    return this.read(['seq', sessionId, count, after]);
  }

  seqOf(sessionId: string, at: string): Promise<number | undefined> {
    this.seqAsks.push([sessionId, at]);
    const answer = this.seqs.shift();
    return answer ? answer.promise : Promise.resolve(undefined);
  }

  private read(read: Read): Promise<Page> {
    this.reads.push(read);
    this.wakeReadWaiters();
    const answer = this.pages.shift();
    return answer ? answer.promise : Promise.reject(new Error('a read nobody expected'));
  }

  private wakeReadWaiters(): void {
    for (const waiter of this.readWaiters) {
      if (waiter.count <= this.reads.length) waiter.asked.resolve();
    }
  }
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
  const streamAfter = (after: MessagePlace | undefined) =>
    new MessageStream(SESSION, live, store, after);

  beforeEach(() => {
    store = new FakeStore();
    liveEnds = 0;
    live = liveFeed();
  });

  describe('without a cursor', () => {
    it('hands on the live messages only, reading nothing stored', async () => {
      const sut = streamAfter(undefined);
      live.push(message(1, 1));
      live.push(message(2));

      expect(await read(sut, 2)).toEqual(['m1', 'm2']);
      expect(store.reads).toEqual([]);
      expect(store.seqAsks).toEqual([]);
    });

    it('hands on a live message that comes in while the reader waits', async () => {
      const sut = streamAfter(undefined);
      const next = sut.next();

      live.push(message(1));

      expect(await outcomeOf(next)).toBe('m1');
      expect(store.seqAsks).toEqual([]);
    });
  });

  describe("after a page's cursor (an order key alone)", () => {
    describe('replay', () => {
      it('hands on the stored pages after the cursor, each read from where the last ended, then the live messages', async () => {
        const sut = streamAfter(pageCursor(0));
        store.answerNextRead(messages(1, 2), true);
        store.answerNextRead(messages(3, 3), false);
        live.push(message(4));

        expect(await read(sut, 1)).toEqual(['m1']);
        expect(store.reads).toEqual([['key', SESSION, REPLAY_PAGE, key(0)]]);
        expect(await read(sut, 1)).toEqual(['m2']);
        // The next page is read only once the last is handed on.
        expect(store.reads).toHaveLength(1);
        expect(await read(sut, 2)).toEqual(['m3', 'm4']);
        expect(store.reads).toEqual([
          ['key', SESSION, REPLAY_PAGE, key(0)],
          ['key', SESSION, REPLAY_PAGE, key(2)],
        ]);
      });

      it('goes live after an empty page', async () => {
        const sut = streamAfter(pageCursor(7));
        store.answerNextRead([], false);
        live.push(message(8));

        expect(await read(sut, 1)).toEqual(['m8']);
        expect(store.reads).toEqual([['key', SESSION, REPLAY_PAGE, key(7)]]);
      });

      it('is its own async iterator', async () => {
        const sut = streamAfter(pageCursor(0));
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

    describe("the commit number of the cursor's message", () => {
      it('is asked once, before the first page, and the pages wait for it', async () => {
        const sut = streamAfter(pageCursor(5));
        const floor = store.holdSeqOf();
        store.answerNextRead([message(6, 11), message(7, 12)], true);
        store.answerNextRead([message(8, 13)], false);

        const first = sut.next();
        expect(store.seqAsks).toEqual([[SESSION, key(5)]]);
        expect(store.reads).toEqual([]);

        floor.resolve(10);
        expect(await outcomeOf(first)).toBe('m6');
        expect(await read(sut, 2)).toEqual(['m7', 'm8']);
        expect(store.seqAsks).toHaveLength(1);
        // Still by key: the pages' commit numbers do not say where the next one starts.
        expect(store.reads).toEqual([
          ['key', SESSION, REPLAY_PAGE, key(5)],
          ['key', SESSION, REPLAY_PAGE, key(7)],
        ]);
      });

      it('is not asked for a cursor of a message the page listed while it was held: no live message is dropped by number', async () => {
        const sut = streamAfter({ key: key(5), held: true });
        store.answerNextRead([], false);

        const first = sut.next();
        await store.readsAsked(1);
        live.push(message(3, 1));
        expect(await outcomeOf(first)).toBe('m3');
        expect(store.seqAsks).toEqual([]);
        expect(store.reads).toEqual([['key', SESSION, REPLAY_PAGE, key(5)]]);
      });

      it('drops the live messages queued at or below it once a page comes, freeing their room', async () => {
        live = liveFeed(3);
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        const page = store.holdNextRead();
        const first = sut.next();
        // Late notices of messages the client's page held: committed before its last message,
        // or that message itself.
        live.push(message(3, 9));
        live.push(message(5, 10));
        live.push(message(9, 12));
        page.resolve({ items: [message(6, 11)], hasNextPage: false });
        expect(await outcomeOf(first)).toBe('m6');

        // m9 alone is left queued: two more fit.
        expect(live.push(message(10, 13))).toBe(true);
        expect(live.push(message(11, 14))).toBe(true);
        expect(await read(sut, 3)).toEqual(['m9', 'm10', 'm11']);
      });

      it('drops the live messages at or below it that come once the replay has caught up', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        store.answerNextRead([], false);
        live.push(message(3, 9));
        live.push(message(5, 10));
        live.push(message(6, 11));

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(message(4, 8));
        live.push(message(7, 12));
        live.finish();
        expect(await read(sut, 2)).toEqual(['m7', 'done']);
      });

      it('drops no live message stored without a commit number', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        const page = store.holdNextRead();
        const first = sut.next();
        live.push(message(3, null));
        live.push(message(4));
        page.resolve({ items: [message(6, 11)], hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m6');
        live.push(message(7, null));
        live.push(message(8));
        live.finish();
        expect(await read(sut, 5)).toEqual(['m3', 'm4', 'm7', 'm8', 'done']);
      });

      it('stays where it is while pages are read by key: a message committed after the cursor comes live', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        const page = store.holdNextRead();
        const first = sut.next();
        // m4 was accepted before the cursor's message but committed after it (another
        // instance): no page after key 5 holds it.
        live.push(message(4, 11));
        page.resolve({ items: [message(6, 13), message(7, 14)], hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m6');
        live.push(message(3, 12));
        live.push(message(8, 15));
        live.finish();
        expect(await read(sut, 5)).toEqual(['m7', 'm4', 'm3', 'm8', 'done']);
      });

      it('still leaves the ids replayed to drop the live notices above it', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        store.answerNextRead([message(6, 11), message(7, 12)], false);

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(message(7, 12));
        live.push(message(6, 11));
        live.push(message(8, 13));
        live.finish();
        expect(await read(sut, 3)).toEqual(['m7', 'm8', 'done']);
      });

      it('when there is none, drops no live message by number, however low', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(undefined);
        store.answerNextRead([message(6, 2)], false);
        live.push(message(1, 1));
        live.push(message(6, 2));

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(message(2, 0));
        live.finish();
        expect(await read(sut, 3)).toEqual(['m1', 'm2', 'done']);
        expect(store.seqAsks).toEqual([[SESSION, key(5)]]);
      });
    });

    describe('the seam between stored and live', () => {
      it('drops the live messages that the page being read holds, and keeps the others in order', async () => {
        const sut = streamAfter(pageCursor(0));
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
        const sut = streamAfter(pageCursor(0));
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
        const sut = streamAfter(pageCursor(0));
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
        expect(store.reads.map(([, , , after]) => after)).toEqual([key(0), key(1)]);
      });

      it('skips a live notice that comes in after the page that held its message', async () => {
        const sut = streamAfter(pageCursor(0));
        store.answerNextRead(messages(1, 2), false);

        expect(await read(sut, 1)).toEqual(['m1']);
        live.push(message(2));
        live.push(message(1));
        live.push(message(3));
        live.finish();

        expect(await read(sut, 3)).toEqual(['m2', 'm3', 'done']);
      });

      it(`remembers the ids of the last ${4 * REPLAY_PAGE} messages replayed, no more`, async () => {
        const sut = streamAfter(pageCursor(0));
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
  });

  describe("after a live event's cursor (an order key and a commit number)", () => {
    it('reads the pages by commit number, each after the last one handed on, and never asks for a number', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([message(6, 21), message(8, 23)], true);
      store.answerNextRead([message(7, 24)], false);
      live.push(message(9, 25));

      expect(await read(sut, 1)).toEqual(['m6']);
      expect(store.reads).toEqual([['seq', SESSION, REPLAY_PAGE, 20]]);
      expect(await read(sut, 3)).toEqual(['m8', 'm7', 'm9']);
      expect(store.reads).toEqual([
        ['seq', SESSION, REPLAY_PAGE, 20],
        ['seq', SESSION, REPLAY_PAGE, 23],
      ]);
      expect(store.seqAsks).toEqual([]);
    });

    it('drops the live messages queued at or below the last number replayed, whatever their ids, and keeps those above in order', async () => {
      live = liveFeed(4);
      const sut = streamAfter(liveCursor(5, 20));
      const page = store.holdNextRead();
      const first = sut.next();
      // A late notice of the cursor's own message and of one before it; then the page's.
      live.push(message(5, 20));
      live.push(message(4, 19));
      live.push(message(6, 21));
      live.push(message(7, 22));
      page.resolve({ items: [message(6, 21)], hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m6');

      // m7 alone is left queued: three more fit.
      for (const index of [8, 9, 10]) expect(live.push(message(index, index + 15))).toBe(true);
      live.finish();
      expect(await read(sut, 5)).toEqual(['m7', 'm8', 'm9', 'm10', 'done']);
    });

    it('moves past each page: a live message a later page holds is dropped when that page comes', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      const firstPage = store.holdNextRead();
      const secondPage = store.holdNextRead();
      const first = sut.next();
      live.push(message(7, 22));
      live.push(message(8, 23));
      firstPage.resolve({ items: [message(6, 21)], hasNextPage: true });
      expect(await outcomeOf(first)).toBe('m6');

      const second = sut.next();
      live.push(message(9, 24));
      secondPage.resolve({ items: [message(7, 22)], hasNextPage: false });

      expect(await outcomeOf(second)).toBe('m7');
      live.finish();
      expect(await read(sut, 3)).toEqual(['m8', 'm9', 'done']);
      expect(store.reads.map(([, , , after]) => after)).toEqual([20, 21]);
    });

    it('drops the live messages at or below the last number replayed that come once the replay has caught up', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([message(6, 21), message(7, 23)], false);

      expect(await read(sut, 2)).toEqual(['m6', 'm7']);
      live.push(message(6, 21));
      live.push(message(7, 23));
      live.push(message(9, 24));
      live.finish();
      expect(await read(sut, 2)).toEqual(['m9', 'done']);
    });

    it('after an empty page, drops the live messages at or below the cursor', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([], false);
      live.push(message(5, 20));
      live.push(message(6, 21));

      expect(await read(sut, 1)).toEqual(['m6']);
      expect(store.reads).toEqual([['seq', SESSION, REPLAY_PAGE, 20]]);
    });
  });

  describe('a read of the stored messages that fails', () => {
    it('ends the stream with SUBSCRIPTION_INTERRUPTED naming the cause, and ends the live feed', async () => {
      const sut = streamAfter(pageCursor(0));
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

    it.each([
      ['a read the database failed', new DatabaseReadError('connect ECONNREFUSED 10.0.0.5:5432')],
      ['a database not ready', new DatabaseNotReadyError('connect ECONNREFUSED 10.0.0.5:5432')],
    ])('names %s an outage, without the host its driver error names', async (_name, error) => {
      const sut = streamAfter(pageCursor(0));
      store.holdNextRead().reject(error);

      await expect(sut.next()).rejects.toMatchObject({
        code: ScribeErrorCode.SubscriptionInterrupted,
        message:
          'The stored messages could not be read (the database cannot be read now): subscribe again shortly, with the same `after`',
      });
    });

    it("ends the stream the same way when the cursor's commit number cannot be read, reading no page", async () => {
      const sut = streamAfter(pageCursor(0));
      const floor = store.holdSeqOf();
      const first = sut.next();
      live.push(message(1, 1));

      floor.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));

      await expect(first).rejects.toMatchObject({
        code: ScribeErrorCode.SubscriptionInterrupted,
        message:
          'The stored messages could not be read (ECONNREFUSED: connection refused): subscribe again shortly, with the same `after`',
      });
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toEqual([]);
    });

    it('ends the stream after the pages it handed on when a later page cannot be read', async () => {
      const sut = streamAfter(pageCursor(0));
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

    it('ends the stream the same way when a page by commit number cannot be read', async () => {
      const sut = streamAfter(liveCursor(0, 20));
      store.answerNextRead([message(1, 21)], true);
      store.holdNextRead().reject(new Error('timeout'));
      live.push(message(2, 22));

      expect(await read(sut, 3)).toEqual([
        'm1',
        `error ${ScribeErrorCode.SubscriptionInterrupted}`,
        'done',
      ]);
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
    });
  });

  describe('a live feed that ends while stored messages are replayed', () => {
    it('hands on the page read, then the live error, reading no further page', async () => {
      const sut = streamAfter(pageCursor(0));
      store.answerNextRead(messages(1, 2), true);
      expect(await read(sut, 1)).toEqual(['m1']);

      live.fail(new ScribeException(ScribeErrorCode.SlowConsumer, 'too slow'));

      expect(await read(sut, 3)).toEqual(['m2', `error ${ScribeErrorCode.SlowConsumer}`, 'done']);
      expect(store.reads).toHaveLength(1);
    });

    it('hands on the rest of the page, then the error, but none of the live messages queued', async () => {
      const sut = streamAfter(pageCursor(0));
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
      const sut = streamAfter(pageCursor(0));
      const page = store.holdNextRead();
      const first = sut.next();
      await store.readsAsked(1);
      live.push(message(9));

      live.finish(new ScribeException(ScribeErrorCode.SubscriptionInterrupted, 'interrupted'));
      page.resolve({ items: messages(1, 2), hasNextPage: true });

      expect(await outcomeOf(first)).toBe(`error ${ScribeErrorCode.SubscriptionInterrupted}`);
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toHaveLength(1);
    });

    it("reads no page when it ends while the cursor's commit number is asked, and tells the live error alone", async () => {
      const sut = streamAfter(pageCursor(0));
      const floor = store.holdSeqOf();
      const first = sut.next();
      live.push(message(9, 11));

      live.finish(new ScribeException(ScribeErrorCode.SlowConsumer, 'too slow'));
      floor.resolve(10);

      expect(await outcomeOf(first)).toBe(`error ${ScribeErrorCode.SlowConsumer}`);
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toEqual([]);
    });
  });

  describe('return', () => {
    it('while a page is being read: ends the live feed, and the page is never handed on', async () => {
      const sut = streamAfter(pageCursor(0));
      const page = store.holdNextRead();
      const first = sut.next();
      await store.readsAsked(1);

      expect(await sut.return()).toEqual({ value: undefined, done: true });
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
      page.resolve({ items: messages(1, 2), hasNextPage: true });

      expect(await first).toEqual({ value: undefined, done: true });
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toHaveLength(1);
    });

    it("while the cursor's commit number is asked: ends the live feed, and no page is read", async () => {
      const sut = streamAfter(pageCursor(0));
      const floor = store.holdSeqOf();
      const first = sut.next();

      expect(await sut.return()).toEqual({ value: undefined, done: true });
      expect(live.isEnded).toBe(true);
      expect(liveEnds).toBe(1);
      floor.resolve(10);

      expect(await first).toEqual({ value: undefined, done: true });
      expect(await read(sut, 1)).toEqual(['done']);
      expect(store.reads).toEqual([]);
    });

    it('drops the rest of the page being handed on', async () => {
      const sut = streamAfter(pageCursor(0));
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
