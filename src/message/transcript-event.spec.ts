import { acceptedRecord } from './testing/message-record.fixture.js';
import { appendedEvent, changedEvent } from './transcript-event.js';

describe(appendedEvent.name, () => {
  it('is the message as stored, at its commit number', () => {
    const record = acceptedRecord('s', 'x', { commitSeq: 5 });

    expect(appendedEvent(record)).toStrictEqual({ kind: 'appended', seq: 5, record });
  });

  it('has no number for a message stored before commit numbers', () => {
    for (const commitSeq of [null, undefined]) {
      const record = acceptedRecord('s', 'x', { commitSeq });

      expect(appendedEvent(record)).toStrictEqual({ kind: 'appended', seq: undefined, record });
    }
  });

  it('is an append even of a message changed since, at its own commit number', () => {
    const record = acceptedRecord('s', '', { commitSeq: 5, redactedAt: 9, changeSeq: 9 });

    expect(appendedEvent(record)).toStrictEqual({ kind: 'appended', seq: 5, record });
  });
});

describe(changedEvent.name, () => {
  it("is an edit, at the commit number of the message's last change", () => {
    const record = acceptedRecord('s', 'x', {
      commitSeq: 5,
      revision: 2,
      editedAt: 1,
      changeSeq: 8,
    });

    expect(changedEvent(record)).toStrictEqual({ kind: 'edited', seq: 8, record });
    const unredacted = { ...record, redactedAt: null };
    expect(changedEvent(unredacted)).toStrictEqual({ kind: 'edited', seq: 8, record: unredacted });
  });

  it('is a redaction once the message has a redaction time, edited before or not', () => {
    for (const redactedAt of [0, 1_000]) {
      const record = acceptedRecord('s', '', {
        commitSeq: 5,
        revision: 3,
        editedAt: 1,
        redactedAt,
        changeSeq: 9,
      });

      expect(changedEvent(record)).toStrictEqual({ kind: 'redacted', seq: 9, record });
    }
  });

  it('has no number when the message has no change number', () => {
    for (const changeSeq of [null, undefined]) {
      const record = acceptedRecord('s', 'x', { commitSeq: 5, changeSeq });

      expect(changedEvent(record)).toStrictEqual({ kind: 'edited', seq: undefined, record });
    }
  });
});
