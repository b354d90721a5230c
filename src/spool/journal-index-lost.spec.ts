import { JournalIndex } from './journal-index.js';
import { type RecordLocation } from './journal-ledger.js';
import { messageRecord } from './testing/records.js';

// JournalIndex when a segment vanished: what memory held becomes orphans, journaled again at a
// new location that the old one leads to; what only the disk held is counted lost.
const A = 'journal-a.jsonl';
const B = 'journal-b.jsonl';
const C = 'journal-c.jsonl';

function at(segment: string, offset: number, length = 10): RecordLocation {
  return { segment, offset, length };
}

describe('JournalIndex and a vanished segment', () => {
  const held = messageRecord('s', 0);
  const journalOnly = messageRecord('s', 1);
  const other = messageRecord('t', 2);
  let sut: JournalIndex;

  beforeEach(() => {
    sut = new JournalIndex();
    sut.addLive('s', 1, at(A, 0), held);
    sut.addLive('s', 2, at(A, 10), journalOnly);
    sut.addLive('t', 3, at(B, 0), other);
    sut.addJournalOnly([
      {
        id: journalOnly.id,
        sessionId: 's',
        orderKey: journalOnly.orderKey,
        acceptedAt: 2,
        location: at(A, 10),
      },
    ]);
  });

  it('orphans what memory held, loses what only the disk held, and forgets the segment', () => {
    expect(sut.dropSegment(A)).toEqual({ orphaned: 1, lost: 1 });

    expect(sut.orphaned()).toEqual([{ record: held, location: at(A, 0, 0), released: false }]);
    expect(sut.lostRecords).toBe(1);
    expect(sut.hasJournalOnly('s')).toBe(false);
    expect(sut.liveBySessions()).toEqual([{ sessionId: 't', messages: 1 }]);
    expect(sut.liveIn(A)).toBe(0);
    expect(sut.liveIn(B)).toBe(1);
    expect(sut.dropSegment(A)).toEqual({ orphaned: 0, lost: 0 });
    expect(sut.lostRecords).toBe(1);
  });

  it('takes records found again off lostRecords, never below none', () => {
    sut.dropSegment(A);
    sut.foundAgain(1);
    expect(sut.lostRecords).toBe(0);
    sut.foundAgain(1);
    expect(sut.lostRecords).toBe(0);
  });

  it('counts no record of a vanished segment that is neither held nor on the journal-only list', () => {
    // Found at start, its journal-only entry not added (yet): owed by the segment alone.
    sut.addLive('s', 4, at(A, 20));
    sut.addLive('u', 5, at(A, 30));
    expect(sut.liveRecords).toBe(5);

    expect(sut.dropSegment(A)).toEqual({ orphaned: 1, lost: 3 });

    expect(sut.liveBySessions()).toEqual([{ sessionId: 't', messages: 1 }]);
    expect(sut.liveRecords).toBe(1);
  });

  it('counts a resolved record once, not again when its segment vanishes', () => {
    sut.addLive('s', 4, at(A, 20));
    sut.resolve([{ id: 'x', sessionId: 's', location: at(A, 20) }]);
    sut.pin(A, 40);
    expect(sut.liveRecords).toBe(3);

    sut.dropSegment(A);

    expect(sut.liveBySessions()).toEqual([{ sessionId: 't', messages: 1 }]);
  });

  it('a rejournaled orphan is live at its new place, and its old location leads there', () => {
    sut.dropSegment(A);
    const [orphan] = sut.orphaned();

    expect(sut.rejournaled(orphan, at(C, 0))).toBe(true);
    expect(sut.rejournaled(orphan, at(C, 50))).toBe(false);

    expect(sut.orphaned()).toEqual([]);
    expect(sut.liveIn(C)).toBe(1);
    expect(sut.liveBySessions()).toEqual([
      { sessionId: 's', messages: 1 },
      { sessionId: 't', messages: 1 },
    ]);
    expect(sut.resolve([{ id: held.id, sessionId: 's', location: at(A, 0) }])).toEqual([C]);
    expect(sut.liveIn(C)).toBe(0);
  });

  it('tells an orphan off disk by the location the transcript knows, until it is journaled again', () => {
    expect(sut.isOnDisk(at(A, 0))).toBe(true);
    sut.dropSegment(A);

    expect(sut.isOnDisk(at(A, 0))).toBe(false);
    expect(sut.isOnDisk(at(B, 0))).toBe(true);
    expect(sut.orphanedRecords).toBe(1);
    sut.rejournaled(sut.orphaned()[0], at(C, 0));
    expect(sut.isOnDisk(at(A, 0))).toBe(true);
    expect(sut.orphanedRecords).toBe(0);
    // Gone again with its new segment: the first location still tells.
    sut.dropSegment(C);
    expect(sut.isOnDisk(at(A, 0))).toBe(false);
  });

  it('follows a record moved twice, from the location first given', () => {
    sut.dropSegment(A);
    sut.rejournaled(sut.orphaned()[0], at(B, 10));
    sut.dropSegment(B);
    const orphans = sut.orphaned();
    expect(orphans.map((orphan) => orphan.record.id)).toEqual([other.id, held.id]);
    orphans.forEach((orphan, index) => sut.rejournaled(orphan, at(C, index * 10)));

    expect(sut.resolve([{ id: held.id, sessionId: 's', location: at(A, 0) }])).toEqual([]);
    expect(sut.liveIn(C)).toBe(1);
    expect(sut.resolve([{ id: other.id, sessionId: 't', location: at(B, 0) }])).toEqual([C]);
  });

  it('an orphan resolved before it is journaled again is owed no more', () => {
    sut.dropSegment(A);
    const [orphan] = sut.orphaned();

    expect(sut.resolve([{ id: held.id, sessionId: 's', location: at(A, 0) }])).toEqual([]);

    expect(sut.orphaned()).toEqual([]);
    expect(sut.rejournaled(orphan, at(C, 0))).toBe(false);
    expect(sut.liveIn(C)).toBe(0);
  });

  it('a held record that leaves memory is held no more: lost, not orphaned, with its segment', () => {
    sut.addJournalOnly([
      { id: held.id, sessionId: 's', orderKey: held.orderKey, acceptedAt: 1, location: at(A, 0) },
    ]);

    expect(sut.dropSegment(A)).toEqual({ orphaned: 0, lost: 2 });
  });

  it('a stored record is held no more', () => {
    sut.resolve([{ id: held.id, sessionId: 's', location: at(A, 0) }]);

    expect(sut.dropSegment(A)).toEqual({ orphaned: 0, lost: 1 });
  });
});
