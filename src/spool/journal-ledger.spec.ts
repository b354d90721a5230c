import { JournalLedger, type RecordLocation } from './journal-ledger.js';
import { type DiskEntry } from './journal-only-list.js';

const A = 'journal-000000000001000-000000-aaaaaaaa.jsonl';
const B = 'journal-000000000002000-000000-aaaaaaaa.jsonl';

/** A 100-byte line at `100 * slot` of `segment`. */
function at(segment: string, slot: number): RecordLocation {
  return { segment, offset: slot * 100, length: 100 };
}

/** A journal-only entry whose order key (and acceptance time) sorts by `key`. */
function entry(sessionId: string, key: number, location: RecordLocation): DiskEntry {
  return {
    id: `${sessionId}-${key}`,
    sessionId,
    orderKey: `${String(key).padStart(15, '0')}.000000.i`,
    acceptedAt: key,
    location,
  };
}

function resolved(entries: DiskEntry[]) {
  return entries.map(({ id, sessionId, location }) => ({ id, sessionId, location }));
}

describe(JournalLedger.name, () => {
  let sut: JournalLedger;

  beforeEach(() => {
    sut = new JournalLedger();
  });

  describe('segments', () => {
    it('counts the records each segment still owes', () => {
      sut.addSegment(A, false);
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 2, at(A, 1));
      sut.addLive('t', 3, at(B, 0));

      expect([sut.liveIn(A), sut.liveIn(B), sut.liveIn('journal-unknown')]).toEqual([2, 1, 0]);
    });

    it('begins a segment unsealed, or sealed when found at start', () => {
      sut.addSegment(A, false);
      sut.addSegment(B, true);

      expect([sut.isSealed(A), sut.isSealed(B)]).toEqual([false, true]);
    });

    it('keeps what it knows of a segment when the segment is added again', () => {
      sut.addSegment(A, false);
      sut.addLive('s', 1, at(A, 0));

      sut.addSegment(A, true);

      expect(sut.isSealed(A)).toBe(false);
      expect(sut.liveIn(A)).toBe(1);
      expect(sut.bytes).toBe(100);
    });

    it('knows a segment it first hears of through a record, unsealed', () => {
      sut.addLive('s', 1, at(A, 0));

      expect(sut.isSealed(A)).toBe(false);
      expect(sut.liveIn(A)).toBe(1);
    });

    it('seals a segment it knows, and no other', () => {
      sut.addSegment(A, false);

      sut.seal(A);
      sut.seal(B);

      expect([sut.isSealed(A), sut.isSealed(B)]).toEqual([true, false]);
      sut.addLive('s', 1, at(B, 0));
      expect(sut.isSealed(B)).toBe(false);
    });

    it('forgets a removed segment: its records, bytes and seal', () => {
      sut.addSegment(A, true);
      sut.addLive('s', 1, at(A, 0));

      sut.removeSegment(A);

      expect([sut.liveIn(A), sut.isSealed(A), sut.bytes]).toEqual([0, false, 0]);
      expect(sut.oldestAcceptedAt).toBeNull();
    });
  });

  describe('bytes', () => {
    it('counts each segment up to the end of its furthest line, in any order', () => {
      sut.addLive('s', 1, { segment: A, offset: 300, length: 50 });
      sut.addLive('s', 1, { segment: A, offset: 0, length: 100 });
      sut.addLive('s', 1, { segment: B, offset: 0, length: 70 });

      expect(sut.bytes).toBe(350 + 70);
    });

    it('counts bytes that hold no record (a bad line) for the size on disk', () => {
      sut.addLive('s', 1, at(A, 0));

      sut.addBytes(A, 1000);
      sut.addBytes(A, 500);
      sut.addBytes(B, 40);

      expect(sut.bytes).toBe(1040);
      expect(sut.liveIn(B)).toBe(0);
      expect(sut.isSealed(B)).toBe(false);
    });

    it('is 0 with no segment', () => {
      expect(sut.bytes).toBe(0);
    });
  });

  describe('live records', () => {
    it('counts the records owed per session, sorted by session, and in all', () => {
      sut.addLive('zulu', 1, at(A, 0));
      sut.addLive('alpha', 1, at(A, 1));
      sut.addLive('zulu', 1, at(B, 0));
      sut.addLive('mike', 1, at(B, 1));

      expect(sut.liveBySessions()).toEqual([
        { sessionId: 'alpha', messages: 1 },
        { sessionId: 'mike', messages: 1 },
        { sessionId: 'zulu', messages: 2 },
      ]);
      expect(sut.liveRecords).toBe(4);
    });

    it('drops a session from the counts once it owes nothing', () => {
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 1, at(A, 1));
      sut.addLive('t', 1, at(A, 2));

      sut.resolve([{ id: 's-1', sessionId: 's', location: at(A, 0) }]);
      expect(sut.liveBySessions()).toEqual([
        { sessionId: 's', messages: 1 },
        { sessionId: 't', messages: 1 },
      ]);

      sut.resolve([{ id: 's-2', sessionId: 's', location: at(A, 1) }]);
      expect(sut.liveBySessions()).toEqual([{ sessionId: 't', messages: 1 }]);
      expect(sut.liveRecords).toBe(1);
    });

    it('is 0 with nothing owed', () => {
      expect(sut.liveRecords).toBe(0);
      expect(sut.liveBySessions()).toEqual([]);
    });
  });

  describe('oldestAcceptedAt', () => {
    it('is null while nothing is owed', () => {
      sut.addSegment(A, false);

      expect(sut.oldestAcceptedAt).toBeNull();
    });

    it('is the oldest acceptance among the segments that still owe records', () => {
      sut.addLive('s', 300, at(A, 0));
      sut.addLive('s', 200, at(A, 1));
      sut.addLive('s', 250, at(B, 0));

      expect(sut.oldestAcceptedAt).toBe(200);
    });

    it('leaves out a segment that owes nothing any more', () => {
      sut.addLive('s', 100, at(A, 0));
      sut.addLive('s', 250, at(B, 0));

      sut.resolve([{ id: 'x', sessionId: 's', location: at(A, 0) }]);

      expect(sut.oldestAcceptedAt).toBe(250);
    });
  });

  describe('pins (bad lines not set aside yet)', () => {
    it('keeps a segment owing while a pin is on it, counting no record of any session', () => {
      sut.addSegment(A, true);
      sut.addLive('s', 1, at(A, 0));
      sut.pin(A, 100);

      expect(sut.resolve(resolved([entry('s', 1, at(A, 0))]))).toEqual([]);
      expect(sut.liveIn(A)).toBe(1);
      expect(sut.liveRecords).toBe(0);
      expect(sut.liveBySessions()).toEqual([]);
    });

    it('says when the last pin goes that the segment owes nothing', () => {
      sut.pin(A, 0);
      sut.pin(A, 100);

      expect(sut.unpin(A, 0)).toBe(false);
      expect(sut.unpin(A, 100)).toBe(true);
      expect(sut.liveIn(A)).toBe(0);
    });

    it('still owes a record after its pin goes', () => {
      sut.addLive('s', 1, at(A, 0));
      sut.pin(A, 100);

      expect(sut.unpin(A, 100)).toBe(false);
      expect(sut.liveIn(A)).toBe(1);
    });

    it('unpins nothing in a segment it does not know', () => {
      expect(sut.unpin(B, 0)).toBe(false);
    });
  });

  describe('resolve', () => {
    it('returns the segments left owing nothing, once each', () => {
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 1, at(A, 1));
      sut.addLive('s', 1, at(B, 0));
      sut.addLive('s', 1, at(B, 1));

      const first = sut.resolve([
        { id: 's-1', sessionId: 's', location: at(A, 0) },
        { id: 's-2', sessionId: 's', location: at(A, 1) },
        { id: 's-3', sessionId: 's', location: at(B, 0) },
      ]);

      expect(first).toEqual([A]);
      expect([sut.liveIn(A), sut.liveIn(B)]).toEqual([0, 1]);
      expect(sut.resolve([{ id: 's-4', sessionId: 's', location: at(B, 1) }])).toEqual([B]);
    });

    it('returns no segment it does not know, and still owes what it does', () => {
      sut.addLive('s', 1, at(A, 0));

      expect(sut.resolve([{ id: 's-1', sessionId: 's', location: at(B, 0) }])).toEqual([]);
      expect(sut.liveRecords).toBe(1);
      expect(sut.liveIn(A)).toBe(1);
    });

    it('owes nothing less for a record resolved twice: the other records of its segment stay owed', () => {
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 2, at(A, 1));
      const once = { id: 's-1', sessionId: 's', location: at(A, 0) };

      expect(sut.resolve([once])).toEqual([]);
      expect(sut.resolve([once])).toEqual([]);

      expect(sut.liveIn(A)).toBe(1);
      expect(sut.liveRecords).toBe(1);
      expect(sut.resolve([{ id: 's-2', sessionId: 's', location: at(A, 1) }])).toEqual([A]);
    });

    it('counts a record written at one place twice once', () => {
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 1, at(A, 0));

      expect(sut.liveRecords).toBe(1);
      expect(sut.resolve([{ id: 's-1', sessionId: 's', location: at(A, 0) }])).toEqual([A]);
    });

    it('lets go of the journal-only entry it resolves, and of the session once it has none', () => {
      const first = entry('s', 1, at(A, 0));
      const second = entry('s', 2, at(A, 1));
      sut.addLive('s', 1, first.location);
      sut.addLive('s', 2, second.location);
      sut.addJournalOnly([first, second]);

      sut.resolve(resolved([first]));
      expect(sut.journalOnlyOf('s', 10)).toEqual([second]);
      expect(sut.hasJournalOnly('s')).toBe(true);

      sut.resolve(resolved([second]));
      expect(sut.journalOnlyOf('s', 10)).toEqual([]);
      expect(sut.hasJournalOnly('s')).toBe(false);
      expect(sut.sessionsWithJournalOnly()).toEqual([]);
    });

    it('leaves the journal-only entry of a duplicate id that lies in another segment', () => {
      // Two instances raced one client id: the same message id, journaled twice.
      const onDisk = entry('s', 1, at(B, 0));
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 1, onDisk.location);
      sut.addJournalOnly([onDisk]);

      const emptied = sut.resolve([{ id: onDisk.id, sessionId: 's', location: at(A, 0) }]);

      expect(emptied).toEqual([A]);
      expect(sut.findJournalOnly('s', onDisk.id)).toEqual(onDisk);
      expect(sut.journalOnlyOf('s', 10)).toEqual([onDisk]);
      expect(sut.liveIn(B)).toBe(1);
    });

    it('leaves the journal-only entry of a duplicate id at another offset of the same segment', () => {
      const onDisk = entry('s', 1, at(A, 1));
      sut.addLive('s', 1, at(A, 0));
      sut.addLive('s', 1, onDisk.location);
      sut.addJournalOnly([onDisk]);

      sut.resolve([{ id: onDisk.id, sessionId: 's', location: at(A, 0) }]);

      expect(sut.findJournalOnly('s', onDisk.id)).toEqual(onDisk);
      expect(sut.hasJournalOnly('s')).toBe(true);
    });

    it('sorts the entries a session gets after it was emptied afresh', () => {
      const old = entry('s', 5, at(A, 0));
      sut.addLive('s', 5, old.location);
      sut.addJournalOnly([old]);
      sut.resolve(resolved([old]));
      const later = [entry('s', 1, at(B, 0)), entry('s', 2, at(B, 1))];

      sut.addJournalOnly(later);

      expect(sut.journalOnlyOf('s', 10)).toEqual(later);
    });
  });

  describe('journal-only entries', () => {
    it('hands them out per session, oldest first, up to the limit', () => {
      const entries = [1, 2, 3, 4].map((key) => entry('s', key, at(A, key)));
      sut.addJournalOnly([...entries, entry('t', 9, at(B, 0))]);

      expect(sut.journalOnlyOf('s', 3)).toEqual(entries.slice(0, 3));
      expect(sut.journalOnlyOf('s', 10)).toEqual(entries);
      expect(sut.journalOnlyOf('t', 10)).toEqual([entry('t', 9, at(B, 0))]);
      expect(sut.journalOnlyOf('nobody', 10)).toEqual([]);
    });

    it('keeps the first copy of a message and hands the second back, owed nothing', () => {
      // An adopted copy and this instance's own evicted copy of one raced client id.
      const adopted = entry('s', 1, at(A, 0));
      const own = { ...entry('s', 1, at(B, 0)), id: adopted.id };

      expect(sut.addJournalOnly([adopted])).toEqual([]);
      expect(sut.addJournalOnly([own])).toEqual([own]);
      expect(sut.addJournalOnly([adopted])).toEqual([]);

      expect(sut.journalOnlyOf('s', 10)).toEqual([adopted]);
    });

    it('keeps adding in acceptance order across calls', () => {
      sut.addJournalOnly([entry('s', 1, at(A, 0)), entry('s', 2, at(A, 1))]);
      sut.addJournalOnly([entry('s', 3, at(A, 2))]);

      expect(sut.journalOnlyOf('s', 10).map((one) => one.acceptedAt)).toEqual([1, 2, 3]);
    });

    it('re-sorts a session when older entries arrive after newer ones (an adopted journal)', () => {
      sut.addJournalOnly([entry('s', 5, at(A, 0)), entry('s', 8, at(A, 1))]);
      sut.addJournalOnly([entry('t', 7, at(A, 2))]);

      sut.addJournalOnly([
        entry('s', 6, at(B, 0)),
        entry('s', 2, at(B, 1)),
        entry('t', 9, at(B, 2)),
      ]);

      expect(sut.journalOnlyOf('s', 10).map((one) => one.acceptedAt)).toEqual([2, 5, 6, 8]);
      expect(sut.journalOnlyOf('t', 10).map((one) => one.acceptedAt)).toEqual([7, 9]);
    });

    it('sorts an older entry that arrives alone', () => {
      sut.addJournalOnly([entry('s', 5, at(A, 0))]);

      sut.addJournalOnly([entry('s', 3, at(A, 1))]);

      expect(sut.journalOnlyOf('s', 10).map((one) => one.acceptedAt)).toEqual([3, 5]);
    });

    it('keeps sorting later additions after a re-sort', () => {
      sut.addJournalOnly([entry('s', 5, at(A, 0))]);
      sut.addJournalOnly([entry('s', 3, at(A, 1))]);

      sut.addJournalOnly([entry('s', 4, at(A, 2))]);

      expect(sut.journalOnlyOf('s', 10).map((one) => one.acceptedAt)).toEqual([3, 4, 5]);
    });

    it('finds an entry by session and id', () => {
      const one = entry('s', 1, at(A, 0));
      sut.addJournalOnly([one]);

      expect(sut.findJournalOnly('s', one.id)).toEqual(one);
      expect(sut.findJournalOnly('t', one.id)).toBeUndefined();
      expect(sut.findJournalOnly('s', 'other')).toBeUndefined();
    });

    it('lists the sessions that have some', () => {
      sut.addJournalOnly([
        entry('s', 1, at(A, 0)),
        entry('t', 1, at(A, 1)),
        entry('s', 2, at(A, 2)),
      ]);

      expect(sut.sessionsWithJournalOnly()).toEqual(['s', 't']);
      expect([sut.hasJournalOnly('s'), sut.hasJournalOnly('u')]).toEqual([true, false]);
    });
  });
});
