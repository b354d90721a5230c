import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { DatabaseReadError } from '../database/database-errors.js';
import { DatabaseNotReadyError } from '../database/database-readiness.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessagePlace } from '../common/graphql/message.mapper.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { type TranscriptEvent } from '../message/transcript-event.js';
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

/** The event of message `index` as stored, committed as number `commitSeq` when given. */
const appended = (index: number, commitSeq?: number | null): TranscriptEvent => ({
  kind: 'appended',
  seq: commitSeq ?? undefined,
  record: message(index, commitSeq),
});

/** The event of an edit of message `index` (stored as `commitSeq`), committed as `changeSeq`. */
function edited(index: number, changeSeq: number, commitSeq?: number): TranscriptEvent {
  return {
    kind: 'edited',
    seq: changeSeq,
    record: {
      ...message(index, commitSeq),
      content: `message ${index}, edited`,
      revision: 2,
      editedAt: 1_000 + changeSeq,
      changeSeq,
    },
  };
}

/** The event of a redaction of message `index` (stored as `commitSeq`), committed as `changeSeq`. */
function redacted(index: number, changeSeq: number, commitSeq?: number): TranscriptEvent {
  return {
    kind: 'redacted',
    seq: changeSeq,
    record: {
      ...message(index, commitSeq),
      content: '',
      revision: 2,
      redactedAt: 1_000 + changeSeq,
      redactionReason: 'a test',
      changeSeq,
    },
  };
}

/** Messages `from` to `to`, both included. */
const messages = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, offset) => message(from + offset));

/** A page's cursor: the order key of message `index`. */
const pageCursor = (index: number): MessagePlace => ({ key: key(index) });
/** A live event's cursor: message `index`, committed as number `seq`. */
const liveCursor = (index: number, seq: number): MessagePlace => ({ key: key(index), seq });

/**
 * A scripted answer: messages for a read by key, events for a read by number (FakeStore
 * refuses the other kind, so a test cannot hand a read what the real store never would).
 */
type Page = { items: (MessageRecord | TranscriptEvent)[]; hasNextPage: boolean };
type Read =
  | [by: 'key' | 'seq', sessionId: string, count: number, after: string | number]
  | [by: 'changes', sessionId: string, count: number, after: number, through: string];

/**
 * The stored messages, as pages the test hands out: each read (by key or by number) takes the
 * next answer scripted with `holdNextRead` (settled by the test) or `answerNextRead`. A read
 * nobody scripted fails, so a stream that reads once too often ends with SUBSCRIPTION_INTERRUPTED
 * instead of hanging. The cursor's commit number is what `holdSeqOf` / `answerSeqOf` script;
 * unscripted, the cursor's message was stored without one (before the commit-seq migration).
 */
class FakeStore implements ReplaySource {
  readonly reads: Read[] = [];
  /** The session's last commit number; past every cursor unless a test says otherwise. */
  last: number | undefined = Number.MAX_SAFE_INTEGER;
  readonly seqAsks: [sessionId: string, key: string][] = [];
  private readonly pages: Deferred<Page>[] = [];
  private readonly seqs: Deferred<number | undefined>[] = [];
  private readonly readWaiters: { count: number; asked: Deferred }[] = [];

  holdNextRead(): Deferred<Page> {
    const answer = deferred<Page>();
    this.pages.push(answer);
    return answer;
  }

  answerNextRead(items: MessageRecord[] | TranscriptEvent[], hasNextPage: boolean): void {
    this.holdNextRead().resolve({ items, hasNextPage });
  }

  holdSeqOf(): Deferred<number | undefined> {
    const answer = deferred<number | undefined>();
    this.seqs.push(answer);
    return answer;
  }

  lastAsks = 0;

  lastSeq(): Promise<number | undefined> {
    this.lastAsks += 1;
    return Promise.resolve(this.last);
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

  afterKey(sessionId: string, count: number, after: string): ReturnType<ReplaySource['afterKey']> {
    return this.read(['key', sessionId, count, after]).then(({ items, hasNextPage }) => {
      const records = items.filter((item): item is MessageRecord => !('kind' in item));
      if (records.length < items.length) throw new Error('events scripted for a read by key');
      return { items: records, hasNextPage };
    });
  }

  afterSeq(sessionId: string, count: number, after: number): ReturnType<ReplaySource['afterSeq']> {
    return this.read(['seq', sessionId, count, after]).then(({ items, hasNextPage }) => {
      const events = items.filter((item): item is TranscriptEvent => 'kind' in item);
      if (events.length < items.length) throw new Error('messages scripted for a read by number');
      return { items: events, hasNextPage };
    });
  }

  seqOf(sessionId: string, at: string): Promise<number | undefined> {
    this.seqAsks.push([sessionId, at]);
    const answer = this.seqs.shift();
    return answer ? answer.promise : Promise.resolve(undefined);
  }

  protected read(read: Read): Promise<Page> {
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

/**
 * A store that tells the stream of edits and redactions too: `changesThrough` takes the next
 * scripted answer as the other reads do, and refuses messages scripted for it.
 */
class FakeChangesStore extends FakeStore {
  changesThrough(
    sessionId: string,
    count: number,
    after: number,
    through: string,
  ): ReturnType<NonNullable<ReplaySource['changesThrough']>> {
    return this.read(['changes', sessionId, count, after, through]).then(
      ({ items, hasNextPage }) => {
        const events = items.filter((item): item is TranscriptEvent => 'kind' in item);
        if (events.length < items.length)
          throw new Error('messages scripted for a read of changes');
        return { items: events, hasNextPage };
      },
    );
  }
}

/**
 * What a read settles to: the message id of an appended event, the id, kind and commit number
 * of a change ('m3 edited 22'), 'done', or the code of the error it failed with.
 */
async function outcomeOf(read: Promise<IteratorResult<TranscriptEvent>>): Promise<string> {
  try {
    const result = await read;
    if (result.done) return 'done';
    const { kind, seq, record } = result.value;
    return kind === 'appended' ? record.id : `${record.id} ${kind} ${seq}`;
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
  let live: BoundedFeed<TranscriptEvent>;
  let liveEnds: number;

  const liveFeed = (items = 100) =>
    new BoundedFeed<TranscriptEvent>(
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
      live.push(appended(1, 1));
      live.push(appended(2));

      expect(await read(sut, 2)).toEqual(['m1', 'm2']);
      expect(store.reads).toEqual([]);
      expect(store.seqAsks).toEqual([]);
    });

    it('hands on a live message that comes in while the reader waits', async () => {
      const sut = streamAfter(undefined);
      const next = sut.next();

      live.push(appended(1));

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
        live.push(appended(4));

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
        live.push(appended(8));

        expect(await read(sut, 1)).toEqual(['m8']);
        expect(store.reads).toEqual([['key', SESSION, REPLAY_PAGE, key(7)]]);
      });

      it('is its own async iterator', async () => {
        const sut = streamAfter(pageCursor(0));
        store.answerNextRead(messages(1, 2), false);
        live.push(appended(3));
        const ids: string[] = [];

        for await (const event of sut) {
          ids.push(event.record.id);
          if (event.record.id === 'm3') live.finish();
        }

        expect(sut[Symbol.asyncIterator]()).toBe(sut);
        expect(ids).toEqual(['m1', 'm2', 'm3']);
      });

      it('hands on the stored messages as appended events, at their commit numbers', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        store.answerNextRead([message(6, 11), message(7)], false);

        expect([(await sut.next()).value, (await sut.next()).value]).toStrictEqual([
          { kind: 'appended', seq: 11, record: message(6, 11) },
          { kind: 'appended', seq: undefined, record: message(7) },
        ]);
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
        live.push(appended(3, 1));
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
        live.push(appended(3, 9));
        live.push(appended(5, 10));
        live.push(appended(9, 12));
        page.resolve({ items: [message(6, 11)], hasNextPage: false });
        expect(await outcomeOf(first)).toBe('m6');

        // m9 alone is left queued: two more fit.
        expect(live.push(appended(10, 13))).toBe(true);
        expect(live.push(appended(11, 14))).toBe(true);
        expect(await read(sut, 3)).toEqual(['m9', 'm10', 'm11']);
      });

      it('drops the live messages at or below it that come once the replay has caught up', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        store.answerNextRead([], false);
        live.push(appended(3, 9));
        live.push(appended(5, 10));
        live.push(appended(6, 11));

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(appended(4, 8));
        live.push(appended(7, 12));
        live.finish();
        expect(await read(sut, 2)).toEqual(['m7', 'done']);
      });

      it('drops the live changes at or below it too, and hands on those above', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        const page = store.holdNextRead();
        const first = sut.next();
        // An edit of m3 the client's page showed (committed before the cursor's message), then
        // one it did not.
        live.push(edited(3, 9, 3));
        live.push(edited(3, 11, 3));
        page.resolve({ items: [], hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m3 edited 11');
        live.push(redacted(4, 8, 4));
        live.push(redacted(4, 12, 4));
        live.finish();
        expect(await read(sut, 2)).toEqual(['m4 redacted 12', 'done']);
      });

      it('drops no live message stored without a commit number', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        const page = store.holdNextRead();
        const first = sut.next();
        live.push(appended(3, null));
        live.push(appended(4));
        page.resolve({ items: [message(6, 11)], hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m6');
        live.push(appended(7, null));
        live.push(appended(8));
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
        live.push(appended(4, 11));
        page.resolve({ items: [message(6, 13), message(7, 14)], hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m6');
        live.push(appended(3, 12));
        live.push(appended(8, 15));
        live.finish();
        expect(await read(sut, 5)).toEqual(['m7', 'm4', 'm3', 'm8', 'done']);
      });

      it('still leaves the ids replayed to drop the live notices above it', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(10);
        store.answerNextRead([message(6, 11), message(7, 12)], false);

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(appended(7, 12));
        live.push(appended(6, 11));
        live.push(appended(8, 13));
        live.finish();
        expect(await read(sut, 3)).toEqual(['m7', 'm8', 'done']);
      });

      it('when there is none, drops no live message by number, however low', async () => {
        const sut = streamAfter(pageCursor(5));
        store.answerSeqOf(undefined);
        store.answerNextRead([message(6, 2)], false);
        live.push(appended(1, 1));
        live.push(appended(6, 2));

        expect(await read(sut, 1)).toEqual(['m6']);
        live.push(appended(2, 0));
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
        live.push(appended(2));
        live.push(appended(3));
        live.push(appended(4));
        page.resolve({ items: messages(1, 3), hasNextPage: false });

        expect(await outcomeOf(first)).toBe('m1');
        live.push(appended(5));
        live.finish();
        expect(await read(sut, 5)).toEqual(['m2', 'm3', 'm4', 'm5', 'done']);
        expect(store.reads).toHaveLength(1);
      });

      it('frees the room the page held in the live queue', async () => {
        live = liveFeed(3);
        const sut = streamAfter(pageCursor(0));
        const page = store.holdNextRead();
        const first = sut.next();
        for (const index of [1, 2, 3]) live.push(appended(index));
        page.resolve({ items: messages(1, 2), hasNextPage: false });
        expect(await outcomeOf(first)).toBe('m1');

        // m3 alone is left queued: two more fit.
        expect(live.push(appended(4))).toBe(true);
        expect(live.push(appended(5))).toBe(true);
        expect(await read(sut, 4)).toEqual(['m2', 'm3', 'm4', 'm5']);
      });

      it('drops a live message that a later page holds, not only the page being read', async () => {
        const sut = streamAfter(pageCursor(0));
        const firstPage = store.holdNextRead();
        const secondPage = store.holdNextRead();
        const first = sut.next();
        live.push(appended(2));
        live.push(appended(3));
        firstPage.resolve({ items: messages(1, 1), hasNextPage: true });
        expect(await outcomeOf(first)).toBe('m1');

        const second = sut.next();
        live.push(appended(4));
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
        live.push(appended(2));
        live.push(appended(1));
        live.push(appended(3));
        live.finish();

        expect(await read(sut, 3)).toEqual(['m2', 'm3', 'done']);
      });

      it('hands on a live change of a message replayed by key, while dropping its append', async () => {
        const sut = streamAfter(pageCursor(0));
        const page = store.holdNextRead();
        const first = sut.next();
        // Committed after the feed opened: m2, then an edit of m1, then m3, before the page read.
        live.push(appended(2));
        live.push(edited(1, 30));
        live.push(appended(3));
        page.resolve({ items: messages(1, 2), hasNextPage: false });
        expect(await outcomeOf(first)).toBe('m1');

        // Late notices, once the replay has caught up: m1's own, then a redaction of m2.
        live.push(appended(1));
        live.push(redacted(2, 31));
        live.finish();
        expect(await read(sut, 5)).toEqual(['m2', 'm1 edited 30', 'm3', 'm2 redacted 31', 'done']);
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
        for (const index of [oldestKept - 1, oldestKept, last, last + 1])
          live.push(appended(index));
        live.finish();

        // A notice older than that is taken for a new message (one duplicate, never a loss).
        expect(await read(sut, 3)).toEqual([`m${oldestKept - 1}`, `m${last + 1}`, 'done']);
      });
    });
  });

  describe("after a live event's cursor (an order key and a commit number)", () => {
    it("refuses a cursor past the session's last commit with BAD_USER_INPUT, reading no page", async () => {
      store.last = 19;
      const sut = streamAfter(liveCursor(5, 20));

      expect(await outcomeOf(sut.next())).toBe(`error ${ScribeErrorCode.BadUserInput}`);
      expect(store.reads).toEqual([]);
      expect(liveEnds).toBe(1);
    });

    it("takes a cursor at the session's last commit, asking for it once however many pages", async () => {
      store.last = 20;
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([appended(6, 21)], true);
      store.answerNextRead([appended(7, 22)], false);

      expect(await read(sut, 2)).toEqual(['m6', 'm7']);
      expect(store.lastAsks).toBe(1);
    });

    it("names the cursor past the session's last commit in its refusal", async () => {
      store.last = undefined;
      const sut = streamAfter(liveCursor(5, 1));

      await expect(sut.next()).rejects.toMatchObject({
        code: ScribeErrorCode.BadUserInput,
        field: 'after',
        message: "after: is past the session's last commit: not a cursor this session gave",
      });
    });

    it('reads the pages by commit number, each after the last one handed on, and never asks for a number', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([appended(6, 21), appended(8, 23)], true);
      store.answerNextRead([appended(7, 24)], false);
      live.push(appended(9, 25));

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
      live.push(appended(5, 20));
      live.push(appended(4, 19));
      live.push(appended(6, 21));
      live.push(appended(7, 22));
      page.resolve({ items: [appended(6, 21)], hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m6');

      // m7 alone is left queued: three more fit.
      for (const index of [8, 9, 10]) expect(live.push(appended(index, index + 15))).toBe(true);
      live.finish();
      expect(await read(sut, 5)).toEqual(['m7', 'm8', 'm9', 'm10', 'done']);
    });

    it('moves past each page: a live message a later page holds is dropped when that page comes', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      const firstPage = store.holdNextRead();
      const secondPage = store.holdNextRead();
      const first = sut.next();
      live.push(appended(7, 22));
      live.push(appended(8, 23));
      firstPage.resolve({ items: [appended(6, 21)], hasNextPage: true });
      expect(await outcomeOf(first)).toBe('m6');

      const second = sut.next();
      live.push(appended(9, 24));
      secondPage.resolve({ items: [appended(7, 22)], hasNextPage: false });

      expect(await outcomeOf(second)).toBe('m7');
      live.finish();
      expect(await read(sut, 3)).toEqual(['m8', 'm9', 'done']);
      expect(store.reads.map(([, , , after]) => after)).toEqual([20, 21]);
    });

    it('drops the live messages at or below the last number replayed that come once the replay has caught up', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([appended(6, 21), appended(7, 23)], false);

      expect(await read(sut, 2)).toEqual(['m6', 'm7']);
      live.push(appended(6, 21));
      live.push(appended(7, 23));
      live.push(appended(9, 24));
      live.finish();
      expect(await read(sut, 2)).toEqual(['m9', 'done']);
    });

    it('after an empty page, drops the live messages at or below the cursor', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([], false);
      live.push(appended(5, 20));
      live.push(appended(6, 21));

      expect(await read(sut, 1)).toEqual(['m6']);
      expect(store.reads).toEqual([['seq', SESSION, REPLAY_PAGE, 20]]);
    });
  });

  describe("after a live event's cursor, with the edits and redactions", () => {
    it('replays the appends and the changes in commit order, each page read after the number of the last event handed on, change or not', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead(
        [appended(6, 21), edited(3, 22, 3), appended(7, 23), redacted(6, 24, 21)],
        true,
      );
      store.answerNextRead([edited(7, 26, 23)], false);
      live.push(appended(8, 27));

      expect(await read(sut, 6)).toEqual([
        'm6',
        'm3 edited 22',
        'm7',
        'm6 redacted 24',
        'm7 edited 26',
        'm8',
      ]);
      expect(store.reads).toEqual([
        ['seq', SESSION, REPLAY_PAGE, 20],
        ['seq', SESSION, REPLAY_PAGE, 24],
      ]);
      expect(store.seqAsks).toEqual([]);
    });

    it('hands on an edit racing the resume once: dropped live at or below the last number replayed, kept above, with no gap', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      const page = store.holdNextRead();
      const first = sut.next();
      // Committed after the feed opened, in this order: m6, an edit of m3, m7, a second edit
      // of m3 (the last change the page shows), then an edit of m6 after the page was read.
      live.push(appended(6, 21));
      live.push(edited(3, 22, 3));
      live.push(appended(7, 23));
      live.push(edited(3, 24, 3));
      live.push(edited(6, 25, 21));
      page.resolve({
        items: [appended(6, 21), appended(7, 23), edited(3, 24, 3)],
        hasNextPage: false,
      });
      expect(await outcomeOf(first)).toBe('m6');

      // Late notices, once the replay has caught up: one at the last number, one above it.
      live.push(edited(3, 24, 3));
      live.push(edited(7, 26, 23));
      live.finish();
      expect(await read(sut, 5)).toEqual([
        'm7',
        'm3 edited 24',
        'm6 edited 25',
        'm7 edited 26',
        'done',
      ]);
      expect(store.reads).toEqual([['seq', SESSION, REPLAY_PAGE, 20]]);
    });

    it('hands on the live changes above the last number replayed, even of a message it replayed, and drops its append', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([appended(6, 21)], false);

      expect(await read(sut, 1)).toEqual(['m6']);
      live.push(appended(6, 21));
      live.push(edited(6, 22, 21));
      live.push(redacted(6, 23, 21));
      live.finish();
      expect(await read(sut, 3)).toEqual(['m6 edited 22', 'm6 redacted 23', 'done']);
    });
  });

  describe("after a page's cursor, with the edits and redactions", () => {
    beforeEach(() => {
      store = new FakeChangesStore();
    });

    it("replays the messages after the cursor, then the changes made since its message's commit number to those at or before it, then goes live", async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      store.answerNextRead([message(6, 11), message(7, 12)], true);
      store.answerNextRead([message(8, 13)], false);
      store.answerNextRead([edited(3, 14, 3), redacted(4, 15, 4)], true);
      store.answerNextRead([edited(2, 16, 2)], false);
      live.push(appended(9, 17));

      expect(await read(sut, 7)).toEqual([
        'm6',
        'm7',
        'm8',
        'm3 edited 14',
        'm4 redacted 15',
        'm2 edited 16',
        'm9',
      ]);
      // The changes are read through the cursor's own key, each page after the last change.
      expect(store.reads).toEqual([
        ['key', SESSION, REPLAY_PAGE, key(5)],
        ['key', SESSION, REPLAY_PAGE, key(7)],
        ['changes', SESSION, REPLAY_PAGE, 10, key(5)],
        ['changes', SESSION, REPLAY_PAGE, 15, key(5)],
      ]);
      expect(store.seqAsks).toEqual([[SESSION, key(5)]]);
    });

    it('still hands on, live, the append of a message before the cursor that the changes read (committed late, elsewhere)', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      const byKey = store.holdNextRead();
      const changes = store.holdNextRead();
      const first = sut.next();
      // m4 was accepted before the cursor's message but committed after it, on another
      // instance, then edited; its append's notice comes late.
      byKey.resolve({ items: [], hasNextPage: false });
      await store.readsAsked(2);
      changes.resolve({ items: [edited(4, 12, 11)], hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m4 edited 12');

      live.push(appended(4, 11));
      live.push(edited(4, 12, 11));
      live.push(appended(9, 13));

      expect(await read(sut, 2)).toEqual(['m4', 'm9']);
    });

    it('reads the changes after an empty replay by key, and goes live after an empty page of them', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      store.answerNextRead([], false);
      store.answerNextRead([], false);
      live.push(appended(6, 11));

      expect(await read(sut, 1)).toEqual(['m6']);
      expect(store.reads).toEqual([
        ['key', SESSION, REPLAY_PAGE, key(5)],
        ['changes', SESSION, REPLAY_PAGE, 10, key(5)],
      ]);
    });

    it('reads every change before the cursor when its message has no commit number, or was held when listed', async () => {
      for (const after of [pageCursor(5), { key: key(5), held: true as const }]) {
        store = new FakeChangesStore();
        live = liveFeed();
        const sut = streamAfter(after);
        store.answerSeqOf(undefined);
        store.answerNextRead([message(6)], false);
        store.answerNextRead([], false);
        live.push(appended(7));

        expect(await read(sut, 2)).toEqual(['m6', 'm7']);
        expect(store.reads).toEqual([
          ['key', SESSION, REPLAY_PAGE, key(5)],
          ['changes', SESSION, REPLAY_PAGE, 0, key(5)],
        ]);
      }
    });

    it('reads no changes before a page: after a live cursor, by commit number alone', async () => {
      const sut = streamAfter(liveCursor(5, 20));
      store.answerNextRead([appended(6, 21), edited(3, 22, 3)], false);
      live.push(appended(7, 23));

      expect(await read(sut, 3)).toEqual(['m6', 'm3 edited 22', 'm7']);
      expect(store.reads).toEqual([['seq', SESSION, REPLAY_PAGE, 20]]);
    });

    it('drops a live change of a message replayed at or after it, and hands on a later one', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      const page = store.holdNextRead();
      store.answerNextRead([], false);
      const first = sut.next();
      // m6, stored as 11, edited as 12 and 13 before the page read it.
      live.push(appended(6, 11));
      live.push(edited(6, 12, 11));
      live.push(edited(6, 13, 11));
      page.resolve({ items: [edited(6, 13, 11).record], hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m6');

      // Late notices of those, and an edit made after the page was read (the page of changes
      // is read meanwhile, and is empty).
      live.push(edited(6, 13, 11));
      live.push(edited(6, 14, 11));
      expect(await read(sut, 1)).toEqual(['m6 edited 14']);
      live.push(edited(6, 12, 11));
      live.push(appended(9, 20));
      expect(await read(sut, 1)).toEqual(['m9']);
      expect(store.reads).toEqual([
        ['key', SESSION, REPLAY_PAGE, key(5)],
        ['changes', SESSION, REPLAY_PAGE, 10, key(5)],
      ]);
    });

    it('drops the live changes the pages of changes read, at or below their numbers', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      store.answerNextRead([], false);
      const changes = store.holdNextRead();
      const first = sut.next();
      await store.readsAsked(2);
      // m3, edited as 12, then 14: the page of changes reads it at 14.
      live.push(edited(3, 12, 3));
      live.push(edited(3, 14, 3));
      changes.resolve({ items: [edited(3, 14, 3)], hasNextPage: false });
      expect(await outcomeOf(first)).toBe('m3 edited 14');

      live.push(edited(3, 14, 3));
      live.push(redacted(3, 16, 3));
      live.finish();
      expect(await read(sut, 2)).toEqual(['m3 redacted 16', 'done']);
    });

    it('keeps a message read again by the changes among the ones remembered, as the latest', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      for (let page = 0; page < 4; page++) {
        const from = 6 + page * REPLAY_PAGE;
        store.answerNextRead(messages(from, from + REPLAY_PAGE - 1), page < 3);
      }
      // m6, the first replayed, changed since; then m3, before the cursor: one id too many.
      store.answerNextRead([edited(6, 900), edited(3, 901)], false);
      const replayed = await read(sut, 4 * REPLAY_PAGE + 2);
      expect(replayed.slice(-3)).toEqual([
        `m${5 + 4 * REPLAY_PAGE}`,
        'm6 edited 900',
        'm3 edited 901',
      ]);

      // m7 is forgotten (its late notice comes again); m6 and m8 are not.
      live.push(edited(6, 900));
      live.push(appended(8));
      live.push(appended(7));
      live.push(edited(3, 901));
      live.finish();
      expect(await read(sut, 2)).toEqual(['m7', 'done']);
    });

    it('ends the stream with SUBSCRIPTION_INTERRUPTED when a page of changes cannot be read', async () => {
      const sut = streamAfter(pageCursor(5));
      store.answerSeqOf(10);
      store.answerNextRead([message(6, 11)], false);
      store.holdNextRead().reject(new Error('timeout'));

      expect(await read(sut, 3)).toEqual([
        'm6',
        `error ${ScribeErrorCode.SubscriptionInterrupted}`,
        'done',
      ]);
      expect(live.isEnded).toBe(true);
    });
  });

  describe('a read of the stored messages that fails', () => {
    it('ends the stream with SUBSCRIPTION_INTERRUPTED naming the cause, and ends the live feed', async () => {
      const sut = streamAfter(pageCursor(0));
      const page = store.holdNextRead();
      const first = sut.next();
      live.push(appended(1));

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
      expect(live.push(appended(2))).toBe(false);
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
      live.push(appended(1, 1));

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
      store.answerNextRead([appended(1, 21)], true);
      store.holdNextRead().reject(new Error('timeout'));
      live.push(appended(2, 22));

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
      live.push(appended(9));

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
      live.push(appended(9));

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
      live.push(appended(9, 11));

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
