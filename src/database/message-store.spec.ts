import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { numberInserted } from './message-store.js';

describe(numberInserted.name, () => {
  it('gives each inserted record its commit number and the key it was stored with', () => {
    const [a, b] = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];

    numberInserted([
      { inserted: [a, b], skipped: [], revision: 9, seqs: [8, 9], orderKeys: ['k-a', 'k-b'] },
    ]);

    expect([a, b].map(({ orderKey, commitSeq }) => ({ orderKey, commitSeq }))).toEqual([
      { orderKey: 'k-a', commitSeq: 8 },
      { orderKey: 'k-b', commitSeq: 9 },
    ]);
  });

  it('leaves the keys of a write that kept them, and skipped records, as they were', () => {
    const [a, skipped] = [acceptedRecord('s', 'a'), acceptedRecord('s', 'skipped')];
    const [keyOfA, keyOfSkipped] = [a.orderKey, skipped.orderKey];

    numberInserted([
      { inserted: [a], skipped: [skipped], revision: 1, seqs: [1] },
      { inserted: [], skipped: [], revision: null, orderKeys: ['unused'] },
    ]);

    expect(a).toMatchObject({ orderKey: keyOfA, commitSeq: 1 });
    expect(skipped.orderKey).toBe(keyOfSkipped);
    expect(skipped).not.toHaveProperty('commitSeq');
  });

  it('sets nothing for a record the results hold no key or number for', () => {
    const a = acceptedRecord('s', 'a');
    const key = a.orderKey;

    numberInserted([{ inserted: [a], skipped: [], revision: 1, seqs: [], orderKeys: [] }]);

    expect(a.orderKey).toBe(key);
    expect(a).not.toHaveProperty('commitSeq');
  });
});
