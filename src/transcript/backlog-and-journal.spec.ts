import { type JournalOnlyMessages, type KeyWindow } from '../message/held-messages.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { type JournalIndex } from '../spool/journal-index.js';
import { type Journal } from '../spool/journal.js';
import { deferred } from '../common/testing/deferred.js';
import { BacklogAndJournal } from './backlog-and-journal.js';
import { HeldMoves } from './held-moves.js';
import { SessionBacklog } from './session-backlog.js';

/** The journal as BacklogAndJournal reads it: which sessions it holds, and the windows asked of it. */
class FakeJournal {
  readonly journalOnly = new Set<string>();
  readonly windows: { sessionId: string; window: KeyWindow; maxBytes: number }[] = [];
  readonly answer: JournalOnlyMessages = { messages: [], beyondCursor: true, total: 4 };
  /** Segments that vanished: their lines are on no disk. */
  readonly vanished = new Set<string>();

  isOnDisk(location: { segment: string }): boolean {
    return !this.vanished.has(location.segment);
  }

  hasJournalOnly(sessionId: string): boolean {
    return this.journalOnly.has(sessionId);
  }

  readWindow(sessionId: string, window: KeyWindow, maxBytes: number): Promise<JournalOnlyMessages> {
    this.windows.push({ sessionId, window, maxBytes });
    return Promise.resolve(this.answer);
  }
}

describe(BacklogAndJournal.name, () => {
  const window: KeyWindow = { direction: 'backward', count: 5 };
  let backlog: SessionBacklog;
  let journal: FakeJournal;
  let moves: HeldMoves;
  let sut: BacklogAndJournal;

  beforeEach(() => {
    moves = new HeldMoves();
    backlog = new SessionBacklog();
    journal = new FakeJournal();
    sut = new BacklogAndJournal(
      backlog,
      journal as unknown as JournalIndex,
      journal as unknown as Journal,
      moves,
    );
  });

  it("lists the backlog's messages held in memory", async () => {
    const record = acceptedRecord('s', 'held');
    await backlog.withSession('s', async (queue) => queue.push([{ record, location: null }]));

    expect(sut.of('s')).toEqual([{ record, status: 'BUFFERED' }]);
  });

  it('lists a journaled message QUEUED while its line is on disk, BUFFERED once its segment vanished', async () => {
    const record = acceptedRecord('s', 'journaled');
    const location = { segment: 'journal-a.jsonl', offset: 0, length: 10 };
    await backlog.withSession('s', async (queue) => queue.push([{ record, location }]));

    expect(sut.of('s')).toEqual([{ record, status: 'QUEUED' }]);
    journal.vanished.add('journal-a.jsonl');
    expect(sut.of('s')).toEqual([{ record, status: 'BUFFERED' }]);
  });

  it('reads nothing from the journal for a session it holds nothing of', async () => {
    expect(sut.inJournalOnly('s')).toBe(false);
    expect(await sut.journalOnly('s', window, 1000)).toEqual({
      messages: [],
      beyondCursor: false,
      total: 0,
    });
    expect(journal.windows).toEqual([]);
  });

  it("reads the page's window back from the journal when it holds some", async () => {
    journal.journalOnly.add('s');

    expect(sut.inJournalOnly('s')).toBe(true);
    expect(await sut.journalOnly('s', window, 1000)).toBe(journal.answer);
    expect(journal.windows).toEqual([{ sessionId: 's', window, maxBytes: 1000 }]);
  });

  it('reads at one moment: after the move under way, before the one asked for after it', async () => {
    const order: string[] = [];
    const moving = deferred();
    const first = moves.move('s', async () => {
      await moving.promise;
      order.push('first move');
    });
    const read = sut.atOneMoment('s', async () => {
      order.push('read');
      return 'read back';
    });
    const second = moves.move('s', async () => {
      order.push('second move');
    });
    // Another session's moves do not wait.
    await moves.move('other', async () => {
      order.push('other move');
    });

    moving.resolve();

    await expect(read).resolves.toBe('read back');
    await Promise.all([first, second]);
    expect(order).toEqual(['other move', 'first move', 'read', 'second move']);
  });
});
