import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { CommitFeed, type CommitListener } from '../database/commit-feed.js';
import { type MessageRecord } from '../message/message-record.js';
import { recordBytes, type SessionRecord } from '../message/session-record.js';
import { type TranscriptEvent } from '../message/transcript-event.js';
import { type BoundedFeed } from './bounded-feed.js';
import { LiveChannels } from './live-channels.js';

const MIN_BUFFER_BYTES = 64 * 1024;

/** A commit feed whose hearing the test turns on and off. */
class FakeCommitFeed extends CommitFeed {
  private hearing = true;

  get live(): boolean {
    return this.hearing;
  }

  set live(hearing: boolean) {
    this.hearing = hearing;
  }

  get heardBy(): CommitListener | undefined {
    return this.listener;
  }
}

/** Message `index` of a session, committed as number `index`. */
function message(sessionId: string, index: number, content = `message ${index}`): MessageRecord {
  return acceptedRecord(sessionId, content, {
    id: `${sessionId}-m${index}`,
    orderKey: String(index).padStart(8, '0'),
    acceptedAt: index,
    commitSeq: index,
  });
}

/** The event of message `index` as stored. */
const appended = (sessionId: string, index: number): TranscriptEvent => ({
  kind: 'appended',
  seq: index,
  record: message(sessionId, index),
});

/** Message `index` as its edit committed as number `changeSeq` left it. */
const editedRecord = (sessionId: string, index: number, changeSeq: number): MessageRecord => ({
  ...message(sessionId, index, `message ${index}, edited`),
  revision: 2,
  editedAt: 1_000 + changeSeq,
  redactedAt: null,
  changeSeq,
});

/** Message `index` as its redaction committed as number `changeSeq` left it. */
const redactedRecord = (sessionId: string, index: number, changeSeq: number): MessageRecord => ({
  ...message(sessionId, index, ''),
  revision: 2,
  redactedAt: 1_000 + changeSeq,
  redactionReason: 'a test',
  changeSeq,
});

function session(id: string, changes: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id,
    title: 'a title',
    metadata: null,
    createdAt: 1,
    updatedAt: 2,
    messageCount: 0,
    revision: 1,
    ...changes,
  };
}

/** What `open` throws. */
function thrownBy(open: () => unknown): unknown {
  try {
    open();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

/**
 * What a feed holds once it has ended: the ids read (a message's for an appended event; its id,
 * kind and commit number for a change, 's1-m1 edited 7'), then 'done' or the error's code.
 */
async function drain<T extends { id: string } | TranscriptEvent>(
  feed: BoundedFeed<T>,
): Promise<string[]> {
  const outcomes: string[] = [];
  for (;;) {
    try {
      const result = await feed.next();
      if (result.done) return [...outcomes, 'done'];
      const value = result.value;
      if (!('record' in value)) outcomes.push(value.id);
      else if (value.kind === 'appended') outcomes.push(value.record.id);
      else outcomes.push(`${value.record.id} ${value.kind} ${value.seq}`);
    } catch (error) {
      return [...outcomes, `error ${(error as ScribeException).code}`];
    }
  }
}

const configOf = (variables: Record<string, string> = {}) =>
  ScribeConfig.fromVariables({
    MAX_SUBSCRIPTIONS: '3',
    SUBSCRIPTION_BUFFER: '2',
    SUBSCRIPTION_BUFFER_BYTES: String(MIN_BUFFER_BYTES),
    ...variables,
  });

describe(LiveChannels.name, () => {
  let feed: FakeCommitFeed;
  let sut: LiveChannels;

  beforeEach(() => {
    feed = new FakeCommitFeed();
    sut = new LiveChannels(feed, configOf());
  });

  it('listens to the commit feed once the module starts', () => {
    expect(feed.heardBy).toBeUndefined();

    sut.onModuleInit();

    expect(feed.heardBy).toBe(sut);
  });

  describe('messages', () => {
    it("hands each feed of a session that session's messages, in order, and no other's", async () => {
      const first = sut.openMessages('s1');
      const second = sut.openMessages('s1');
      const other = sut.openMessages('s2');

      sut.messages('s1', [message('s1', 1), message('s1', 2)]);
      sut.messages('s3', [message('s3', 1)]);
      sut.interrupted('test over');

      const ended = `error ${ScribeErrorCode.SubscriptionInterrupted}`;
      expect(await drain(first)).toEqual(['s1-m1', 's1-m2', ended]);
      expect(await drain(second)).toEqual(['s1-m1', 's1-m2', ended]);
      expect(await drain(other)).toEqual([ended]);
    });

    it('ends a feed that falls more than SUBSCRIPTION_BUFFER messages behind, and only that one', async () => {
      const reading = sut.openMessages('s1');
      const stalled = sut.openMessages('s1');
      // A reader waiting takes the first message at once; two more fit its buffer.
      const waiting = reading.next();

      sut.messages('s1', [message('s1', 1), message('s1', 2), message('s1', 3)]);

      expect((await waiting).value).toEqual(appended('s1', 1));
      expect(stalled.isEnded).toBe(true);
      expect(await drain(stalled)).toEqual([`error ${ScribeErrorCode.SlowConsumer}`]);
      expect(reading.isEnded).toBe(false);
      expect(sut.openCount).toBe(1);
      sut.interrupted('test over');
      expect(await drain(reading)).toEqual([
        's1-m2',
        's1-m3',
        `error ${ScribeErrorCode.SubscriptionInterrupted}`,
      ]);
    });

    it('bounds the bytes a feed holds by SUBSCRIPTION_BUFFER_BYTES, as recordBytes counts them', async () => {
      sut = new LiveChannels(feed, configOf({ SUBSCRIPTION_BUFFER: '100' }));
      const half = MIN_BUFFER_BYTES / 2;
      const empty = recordBytes(message('s1', 1, ''));
      const large = (index: number) => message('s1', index, 'x'.repeat((half - empty) / 2));
      expect(recordBytes(large(1))).toBe(half);
      const fits = sut.openMessages('s1');

      sut.messages('s1', [large(1), large(2)]);
      expect(fits.isEnded).toBe(false);
      sut.messages('s1', [message('s1', 3, '')]);

      expect(fits.isEnded).toBe(true);
      expect(await drain(fits)).toEqual([`error ${ScribeErrorCode.SlowConsumer}`]);
    });

    it('does nothing with the messages of a session nobody follows', () => {
      expect(() => sut.messages('nobody', [message('nobody', 1)])).not.toThrow();
      expect(sut.follows('nobody')).toBe(false);
    });
  });

  describe('messageChanged', () => {
    it('hands a change to the feeds of its session opened with changes, in commit order, and to no plain feed', async () => {
      sut = new LiveChannels(feed, configOf({ SUBSCRIPTION_BUFFER: '100' }));
      const withChanges = sut.openMessages('s1', true);
      const plain = sut.openMessages('s1');
      const other = sut.openMessages('s2', true);

      sut.messages('s1', [message('s1', 1)]);
      sut.messageChanged(editedRecord('s1', 1, 2));
      sut.messages('s1', [message('s1', 3)]);
      sut.messageChanged(redactedRecord('s1', 3, 4));
      sut.interrupted('test over');

      const ended = `error ${ScribeErrorCode.SubscriptionInterrupted}`;
      expect(await drain(withChanges)).toEqual([
        's1-m1',
        's1-m1 edited 2',
        's1-m3',
        's1-m3 redacted 4',
        ended,
      ]);
      expect(await drain(plain)).toEqual(['s1-m1', 's1-m3', ended]);
      expect(await drain(other)).toEqual([ended]);
    });

    it('hands on the record as the change left it, at its change number: redacted once redactedAt is set, else edited', async () => {
      sut = new LiveChannels(feed, configOf({ SUBSCRIPTION_BUFFER: '100' }));
      const changes = sut.openMessages('s1', true);
      const edited = editedRecord('s1', 1, 7);
      const editedBefore = { ...editedRecord('s1', 2, 8), redactedAt: undefined };
      const redacted = redactedRecord('s1', 1, 9);

      for (const record of [edited, editedBefore, redacted]) sut.messageChanged(record);

      const events = [];
      for (let index = 0; index < 3; index++) events.push((await changes.next()).value);
      expect(events).toStrictEqual([
        { kind: 'edited', seq: 7, record: edited },
        { kind: 'edited', seq: 8, record: editedBefore },
        { kind: 'redacted', seq: 9, record: redacted },
      ]);
      expect(events[2]?.record).toBe(redacted);
    });

    it('counts the changes against the buffer of the feeds that get them only', async () => {
      const withChanges = sut.openMessages('s1', true);
      const plain = sut.openMessages('s1');

      for (const changeSeq of [2, 3, 4]) sut.messageChanged(editedRecord('s1', 1, changeSeq));

      expect(withChanges.isEnded).toBe(true);
      expect(await drain(withChanges)).toEqual([`error ${ScribeErrorCode.SlowConsumer}`]);
      expect(plain.isEnded).toBe(false);
      expect(sut.openCount).toBe(1);
    });

    it('does nothing with a change in a session nobody follows, or whose changes of title alone are followed', async () => {
      const elsewhere = sut.openMessages('s2', true);
      const sessionFeed = sut.openSession('s1');

      expect(() => sut.messageChanged(editedRecord('nobody', 1, 2))).not.toThrow();
      expect(() => sut.messageChanged(redactedRecord('s1', 1, 3))).not.toThrow();

      expect(sut.follows('nobody')).toBe(false);
      sut.interrupted('test over');
      const ended = `error ${ScribeErrorCode.SubscriptionInterrupted}`;
      expect(await drain(elsewhere)).toEqual([ended]);
      expect(await drain(sessionFeed)).toEqual([ended]);
    });
  });

  describe('sessions', () => {
    it("hands each session feed that session's changes, and none to message feeds", async () => {
      const sessionFeed = sut.openSession('s1');
      const messageFeed = sut.openMessages('s1');
      const other = sut.openSession('s2');

      sut.sessionChanged(session('s1', { revision: 2 }));
      sut.sessionChanged(session('s3'));
      sut.messages('s1', [message('s1', 1)]);
      sut.interrupted('test over');

      const ended = `error ${ScribeErrorCode.SubscriptionInterrupted}`;
      expect(await drain(sessionFeed)).toEqual(['s1', ended]);
      expect(await drain(messageFeed)).toEqual(['s1-m1', ended]);
      expect(await drain(other)).toEqual([ended]);
    });

    it('hands on each revision once, never an older one after a newer, and forgets them once nobody follows', async () => {
      sut = new LiveChannels(feed, configOf({ SUBSCRIPTION_BUFFER: '100' }));
      const first = sut.openSession('s1');
      for (const revision of [2, 2, 1, 4, 3, 5]) sut.sessionChanged(session('s1', { revision }));
      const seen = [];
      for (let index = 0; index < 3; index++) {
        seen.push(((await first.next()).value as SessionRecord).revision);
      }
      expect(seen).toEqual([2, 4, 5]);
      await first.return();

      // Nobody followed s1 for a moment: a new follower gets what comes, whatever came before.
      const second = sut.openSession('s1');
      sut.sessionChanged(session('s1', { revision: 2 }));
      expect(((await second.next()).value as SessionRecord).revision).toBe(2);
    });

    it("counts a session's bytes as its metadata's JSON and two per character of its title", async () => {
      sut = new LiveChannels(feed, configOf({ SUBSCRIPTION_BUFFER: '100' }));
      const half = MIN_BUFFER_BYTES / 2;
      // 'null' is 4 bytes; an é is 2 bytes of JSON, the quotes 2 more.
      const titled = session('s1', {
        title: 'a'.repeat((half - 4) / 2),
        metadata: null,
        revision: 1,
      });
      const described = session('s1', {
        title: null,
        metadata: 'é'.repeat((half - 2) / 2),
        revision: 2,
      });
      const bare = session('s1', { title: null, metadata: undefined, revision: 3 });
      const fits = sut.openSession('s1');

      sut.sessionChanged(titled);
      sut.sessionChanged(described);
      expect(fits.isEnded).toBe(false);
      sut.sessionChanged(bare);

      expect(fits.isEnded).toBe(true);
      expect(await drain(fits)).toEqual([`error ${ScribeErrorCode.SlowConsumer}`]);
    });
  });

  describe('follows', () => {
    it('says whether this instance follows a session, by its messages or by its changes', async () => {
      expect(sut.follows('s1')).toBe(false);

      const messages = sut.openMessages('s1');
      const changes = sut.openSession('s2');

      expect([sut.follows('s1'), sut.follows('s2'), sut.follows('s3')]).toEqual([
        true,
        true,
        false,
      ]);
      await messages.return();
      await changes.return();
      expect([sut.follows('s1'), sut.follows('s2')]).toEqual([false, false]);
    });

    it('keeps following a session while any of its feeds is open', async () => {
      const first = sut.openMessages('s1');
      const second = sut.openMessages('s1');

      await first.return();
      expect(sut.follows('s1')).toBe(true);
      await second.return();
      expect(sut.follows('s1')).toBe(false);

      const again = sut.openMessages('s1');
      sut.messages('s1', [message('s1', 1)]);
      expect((await again.next()).value).toEqual(appended('s1', 1));
    });
  });

  describe('MAX_SUBSCRIPTIONS', () => {
    it('counts the feeds open, of both kinds, until they end', async () => {
      const first = sut.openMessages('s1');
      sut.openSession('s1');
      expect(sut.openCount).toBe(2);

      await first.return();
      await first.return();

      expect(sut.openCount).toBe(1);
    });

    it('refuses a feed past MAX_SUBSCRIPTIONS with TOO_MANY_SUBSCRIPTIONS, and takes one again once a feed ends', async () => {
      const first = sut.openMessages('s1');
      sut.openSession('s2');
      sut.openMessages('s3');

      const tooMany = {
        code: ScribeErrorCode.TooManySubscriptions,
        message:
          'This instance holds its most subscriptions (3, MAX_SUBSCRIPTIONS); try again later',
      };
      expect(thrownBy(() => sut.openMessages('s4'))).toMatchObject(tooMany);
      expect(thrownBy(() => sut.openSession('s4'))).toMatchObject(tooMany);
      expect(sut.openCount).toBe(3);
      expect(sut.follows('s4')).toBe(false);

      await first.return();
      expect(sut.openSession('s4').isEnded).toBe(false);
      expect(sut.openCount).toBe(3);
    });
  });

  describe('a commit feed that is not live', () => {
    it('refuses feeds with SUBSCRIPTION_INTERRUPTED while commits go unheard', () => {
      feed.live = false;

      for (const open of [() => sut.openMessages('s1'), () => sut.openSession('s1')]) {
        const refused = thrownBy(open);
        expect(refused).toBeInstanceOf(ScribeException);
        expect(refused).toMatchObject({
          code: ScribeErrorCode.SubscriptionInterrupted,
          message:
            'Live updates are unavailable while the database cannot be reached; try again shortly',
        });
      }
      expect(sut.openCount).toBe(0);
      expect(sut.follows('s1')).toBe(false);

      feed.live = true;
      expect(sut.openMessages('s1').isEnded).toBe(false);
    });
  });

  describe('interrupted', () => {
    it('ends every feed, after what it queued, with SUBSCRIPTION_INTERRUPTED naming the reason', async () => {
      const messages = sut.openMessages('s1');
      const changes = sut.openSession('s2');
      sut.messages('s1', [message('s1', 1)]);

      sut.interrupted('the connection was lost');

      expect(sut.openCount).toBe(0);
      expect([sut.follows('s1'), sut.follows('s2')]).toEqual([false, false]);
      expect(await messages.next()).toEqual({ value: appended('s1', 1), done: false });
      await expect(messages.next()).rejects.toMatchObject({
        code: ScribeErrorCode.SubscriptionInterrupted,
        message:
          'Live updates were interrupted (the connection was lost): subscribe again, with `after` set to the cursor of the last message received',
      });
      expect(await drain(changes)).toEqual([`error ${ScribeErrorCode.SubscriptionInterrupted}`]);
    });

    it('still takes new feeds afterwards', () => {
      sut.openMessages('s1');

      sut.interrupted('the connection was lost');

      expect(sut.openMessages('s1').isEnded).toBe(false);
      expect(sut.openCount).toBe(1);
    });
  });

  describe('close', () => {
    it('ends every feed with the error given, and refuses new ones with it', async () => {
      const shutdown = new ScribeException(ScribeErrorCode.ServiceUnavailable, 'shutting down');
      const messages = sut.openMessages('s1');
      const changes = sut.openSession('s1');
      const waiting = messages.next();

      sut.close(shutdown);

      await expect(waiting).rejects.toBe(shutdown);
      await expect(changes.next()).rejects.toBe(shutdown);
      expect(sut.openCount).toBe(0);
      expect(thrownBy(() => sut.openMessages('s2'))).toBe(shutdown);
      expect(thrownBy(() => sut.openSession('s2'))).toBe(shutdown);
      // Closed comes first: it is no outage.
      feed.live = false;
      expect(thrownBy(() => sut.openMessages('s2'))).toBe(shutdown);
      expect(sut.openCount).toBe(0);
    });
  });
});
