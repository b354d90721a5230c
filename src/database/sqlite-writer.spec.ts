import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { errorData, errorFrom, packWrites, unpackWrites } from './sqlite-writer-protocol.js';
import { positionsOf } from './sqlite-writer.js';

describe(positionsOf.name, () => {
  const [a, b, c] = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b'), acceptedRecord('s', 'c')];

  it('names no position when every record was inserted, and keeps the revision', () => {
    expect(
      positionsOf([a, b], { inserted: [a, b], skipped: [], revision: 7, seqs: [6, 7] }),
    ).toEqual({ skipped: [], revision: 7, seqs: [6, 7] });
  });

  it('hands on the keys the write stored the records with, when it gave them new ones', () => {
    expect(
      positionsOf([a, b], {
        inserted: [b],
        skipped: [a],
        revision: 2,
        seqs: [2],
        orderKeys: ['k-b'],
      }),
    ).toEqual({ skipped: [0], revision: 2, seqs: [2], orderKeys: ['k-b'] });
  });

  it('names the positions of the records stored already', () => {
    expect(
      positionsOf([a, b, c], { inserted: [b], skipped: [a, c], revision: 1, seqs: [1] }),
    ).toEqual({ skipped: [0, 2], revision: 1, seqs: [1] });
  });

  it('counts the first copy of a record listed twice as inserted and the second as skipped', () => {
    expect(
      positionsOf([a, b, a], { inserted: [a, b], skipped: [a], revision: 2, seqs: [1, 2] }),
    ).toEqual({ skipped: [2], revision: 2, seqs: [1, 2] });
  });

  it('names every position when nothing was inserted', () => {
    expect(positionsOf([a, a], { inserted: [], skipped: [a, a], revision: null })).toEqual({
      skipped: [0, 1],
      revision: null,
      seqs: [],
    });
  });
});

describe('errors across the writer thread', () => {
  it('keeps the name, message, code and errno of a driver error', () => {
    const driver = Object.assign(new Error('SQLITE_FULL: database or disk is full'), {
      code: 'SQLITE_FULL',
      errno: 13,
    });
    driver.name = 'SqliteError';

    const again = errorFrom(structuredClone(errorData(driver)));

    expect(again).toBeInstanceOf(Error);
    expect(again).toMatchObject({
      name: 'SqliteError',
      message: 'SQLITE_FULL: database or disk is full',
      code: 'SQLITE_FULL',
      errno: 13,
    });
  });

  it('adds no code or errno an error did not have, nor ones of the wrong type', () => {
    const odd = Object.assign(new Error('odd'), { code: 5, errno: '5' });

    expect(errorData(odd)).toEqual({ name: 'Error', message: 'odd' });
    const plain = errorFrom(errorData(new Error('plain')));
    expect(plain).not.toHaveProperty('code');
    expect(plain).not.toHaveProperty('errno');
  });

  it('describes a thrown value that is not an Error by its text', () => {
    expect(errorData('gone')).toEqual({ name: 'Error', message: 'gone' });
  });
});

describe('writes across the writer thread', () => {
  const full = acceptedRecord('a', 'every field', {
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCallId: 't-1',
    toolCalls: [{ id: 1, args: { q: 'x' } }],
    metadata: { lang: 'en', tags: ['a'] },
    createdAt: 1_600_000_000_000,
    revision: 3,
    editedAt: 1_600_000_000_500,
    redactedAt: 1_600_000_000_900,
    redactionReason: 'imported as redacted',
  });
  const plain = acceptedRecord('a', 'plain');
  const other = acceptedRecord('b', 'other session');

  it('arrive as they were sent: every field of every record, each session with its own', () => {
    const writes = [
      { sessionId: 'a', records: [full, plain], after: 'stored' as const },
      { sessionId: 'empty', records: [] },
      { sessionId: 'b', records: [other] },
    ];

    expect(unpackWrites(structuredClone(packWrites(writes)))).toStrictEqual(writes);
  });

  it('cross as one list of values for each field, not as objects', () => {
    const packed = packWrites([
      { sessionId: 'a', records: [full, plain] },
      { sessionId: 'b', records: [other] },
    ]);

    expect(packed.sessionIds).toEqual(['a', 'b']);
    expect(packed.counts).toEqual([2, 1]);
    expect(packed.after).toEqual([null, null]);
    expect(packed.columns).toHaveLength(Object.keys(full).length);
    expect(packed.columns[0]).toEqual([full.id, plain.id, other.id]);
    expect(packed.columns[4]).toEqual(['every field', 'plain', 'other session']);
  });
});
