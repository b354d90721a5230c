import { EventEmitter2 } from '@nestjs/event-emitter';
import {
  HeldMessages,
  type JournalOnlyMessages,
  type KeyWindow,
  type HeldMessage,
} from '../message/held-messages.js';
import { AppendStatus } from '../message/append-status.js';
import { type SessionUpdates } from '../database/session-updates.js';

const noPending = { of: () => [] } as unknown as HeldMessages;
import { ScribeConfig } from '../config/scribe-config.js';
import { type SessionQueries } from '../database/session-queries.js';
import { type SessionListQueries } from '../database/session-list-queries.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type FullSession } from '../message/session-record.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { SessionReader } from './session-reader.js';
import { newReader } from './testing/new-reader.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Full loads the test releases one by one. */
function harness() {
  const running: { id: string; done: Deferred<FullSession | null> }[] = [];
  const queries = {
    loadFull: (id: string) => {
      const done = deferred<FullSession | null>();
      running.push({ id, done });
      return done.promise;
    },
    findMetadata: () => Promise.resolve(null),
  } as unknown as SessionQueries;
  const config = ScribeConfig.fromVariables({
    SESSION_RESOLVE_CONCURRENCY: '2',
    SESSION_CACHE_SIZE: '0',
  });
  const reader = newReader(
    queries,
    config,
    new EventEmitter2(),
    noPending,
    {} as SessionUpdates,
    {} as SessionListQueries,
  );
  const release = (id: string) => {
    const index = running.findIndex((load) => load.id === id);
    running.splice(index, 1)[0].done.resolve(null);
  };
  return { reader, running, release };
}

describe(SessionReader.name, () => {
  it("runs one request's full reads one at a time, beside another request's", async () => {
    const { reader, running, release } = harness();
    const greedy = {};
    const modest = {};
    const greedyReads = ['a', 'b', 'c'].map((id) => reader.full(id, undefined, greedy));
    const modestRead = reader.full('z', undefined, modest);
    await tick();
    // Two slots: the greedy request holds one, the other request gets the second at once.
    expect(running.map((load) => load.id)).toEqual(['a', 'z']);
    release('a');
    await tick();
    expect(running.map((load) => load.id)).toEqual(['z', 'b']);
    release('z');
    release('b');
    await tick();
    expect(running.map((load) => load.id)).toEqual(['c']);
    release('c');
    await Promise.all([...greedyReads, modestRead]);
  });

  it('lets reads without a requester use the slots as they come', async () => {
    const { reader, running, release } = harness();
    const reads = ['a', 'b'].map((id) => reader.full(id));
    await tick();
    expect(running.map((load) => load.id)).toEqual(['a', 'b']);
    release('a');
    release('b');
    await Promise.all(reads);
  });

  describe('pages', () => {
    const MAX_PAGE_BYTES = 65536;
    const pageReader = (queries: Partial<SessionQueries> = {}) =>
      newReader(
        queries as SessionQueries,
        ScribeConfig.fromVariables({ MAX_PAGE_BYTES: String(MAX_PAGE_BYTES) }),
        new EventEmitter2(),
        noPending,
        {} as SessionUpdates,
        {} as SessionListQueries,
      );
    // recordBytes of each: 200 + 2 × (id, session, key and 10,000 characters) ≈ 20.3 kB; a
    // fourth one is taken at 61 kB < 64 KiB, a fifth is not.
    const transcript = Array.from({ length: 8 }, () => acceptedRecord('s', 'x'.repeat(10_000)));

    const forward = (count: number, after?: string) => ({
      direction: 'forward' as const,
      count,
      ...(after !== undefined ? { after } : {}),
    });

    it('pages a transcript in memory up to MAX_PAGE_BYTES, then says more follow', () => {
      const page = pageReader().transcriptPage(transcript, forward(1000));
      expect(page.items).toEqual(transcript.slice(0, 4));
      expect(page.hasNextPage).toBe(true);
      expect(page.hasPreviousPage).toBe(false);
    });

    it('pages from just after the cursor, to the end', () => {
      const reader = pageReader();
      expect(reader.transcriptPage(transcript, forward(2, transcript[2].orderKey))).toEqual({
        items: transcript.slice(3, 5),
        hasNextPage: true,
        hasPreviousPage: true,
      });
      expect(reader.transcriptPage(transcript, forward(1000, transcript[5].orderKey))).toEqual({
        items: transcript.slice(6),
        hasNextPage: false,
        hasPreviousPage: true,
      });
      expect(reader.transcriptPage(transcript, forward(10, transcript[7].orderKey))).toEqual({
        items: [],
        hasNextPage: false,
        hasPreviousPage: true,
      });
    });

    it('pages back from the end, keeping the newest that fit in MAX_PAGE_BYTES', () => {
      expect(
        pageReader().transcriptPage(transcript, { direction: 'backward', count: 1000 }),
      ).toEqual({ items: transcript.slice(4), hasNextPage: false, hasPreviousPage: true });
    });

    it('reads a page from the database with the MAX_PAGE_BYTES bound', async () => {
      const calls: unknown[][] = [];
      const reader = pageReader({
        pageOfMessages: (...args: unknown[]) => {
          calls.push(args);
          return Promise.resolve({ items: [], hasNextPage: false, hasPreviousPage: false });
        },
      });
      await reader.messagePage('s', forward(7, 'k'));
      expect(calls).toEqual([['s', forward(7, 'k'), MAX_PAGE_BYTES]]);
    });
  });
});

describe(`${SessionReader.name}.heldWithJournal`, () => {
  const request = { direction: 'forward' as const, count: 10 };

  /** What the write path holds, as a fake over the port: it tells what was read inside a moment. */
  class MomentBacklog extends HeldMessages {
    inMoment = false;
    moments = 0;
    readonly readsOutside: string[] = [];
    readonly held: HeldMessage[] = [
      { record: acceptedRecord('s', 'held'), status: AppendStatus.QUEUED },
    ];

    of(): HeldMessage[] {
      if (!this.inMoment) this.readsOutside.push('held');
      return this.held;
    }

    inJournalOnly(): boolean {
      return true;
    }

    journalOnly(_id: string, _window: KeyWindow, maxBytes: number): Promise<JournalOnlyMessages> {
      if (!this.inMoment) this.readsOutside.push('journal');
      // The page's byte bound, told back through the total.
      return Promise.resolve({ messages: [], beyondCursor: false, total: maxBytes / 10_000 });
    }

    async atOneMoment<T>(_id: string, read: () => Promise<T>): Promise<T> {
      this.moments += 1;
      this.inMoment = true;
      try {
        return await read();
      } finally {
        this.inMoment = false;
      }
    }
  }

  function readerOver(backlog: MomentBacklog): SessionReader {
    const queries = {
      findMetadata: () => {
        if (!backlog.inMoment) backlog.readsOutside.push('stored count');
        return Promise.resolve({ messageCount: 3 });
      },
    } as unknown as SessionQueries;
    return newReader(
      queries,
      ScribeConfig.fromVariables({ MAX_PAGE_BYTES: '70000' }),
      new EventEmitter2(),
      backlog,
      {} as SessionUpdates,
      {} as SessionListQueries,
    );
  }

  it('reads the stored count, the journal (within the page bound) and memory at one moment', async () => {
    const backlog = new MomentBacklog();

    const sut = await readerOver(backlog).heldWithJournal('s', request);

    expect(sut).toEqual({
      held: backlog.held,
      journal: { messages: [], beyondCursor: false, total: 7 },
      stored: 3,
    });
    expect(backlog.moments).toBe(1);
    expect(backlog.readsOutside).toEqual([]);
  });
});
