import { SlotCounts } from './slot-counts.js';

describe(SlotCounts.name, () => {
  it('gives each key `limit` slots, independently of the others', () => {
    const sut = new SlotCounts(2);

    expect([sut.take('a'), sut.take('a'), sut.take('a')]).toEqual([true, true, false]);
    expect(sut.full('a')).toBe(true);
    expect(sut.take('b')).toBe(true);
    expect(sut.full('b')).toBe(false);
    expect([sut.heldBy('a'), sut.heldBy('b'), sut.heldBy('c'), sut.total]).toEqual([2, 1, 0, 3]);
  });

  it('takes a slot back once given, and never counts below zero', () => {
    const sut = new SlotCounts(1);
    sut.take('a');
    sut.give('a');
    sut.give('a');
    sut.give('never');

    expect([sut.heldBy('a'), sut.heldBy('never'), sut.total]).toEqual([0, 0, 0]);
    expect(sut.take('a')).toBe(true);
    expect(sut.take('a')).toBe(false);
    expect(sut.total).toBe(1);
  });

  it('keeps no entry for a key that holds nothing', () => {
    const sut = new SlotCounts(3);
    sut.take('a');
    sut.take('a');
    sut.take('b');
    sut.give('a');

    expect(sut.keys).toBe(2);
    sut.give('a');
    expect(sut.keys).toBe(1);
    sut.give('b');
    expect([sut.keys, sut.total]).toEqual([0, 0]);
  });
});
