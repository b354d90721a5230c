import { type DiskEntry } from './journal-only-list.js';
import { selectWindow } from './journal-window.js';

const SEGMENT = 'journal-000000000001000-000000-aaaaaaaa.jsonl';

/** The `key`-th journal-only entry, its line `length` bytes long. */
function entry(key: number, length = 100): DiskEntry {
  return {
    id: `m${key}`,
    sessionId: 's',
    orderKey: `${String(key).padStart(15, '0')}.000000.i`,
    acceptedAt: key,
    location: { segment: SEGMENT, offset: key * 1000, length },
  };
}

const entries = [1, 2, 3, 4, 5].map((key) => entry(key));
const keyOf = (key: number) => entry(key).orderKey;
const ids = (selected: DiskEntry[]) => selected.map(({ id }) => id);

describe(selectWindow.name, () => {
  it('takes all of a window that fits, oldest first, with no horizon', () => {
    const sut = selectWindow(entries, { direction: 'forward', count: 10 }, 10_000);

    expect(ids(sut.entries)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
    expect(sut.horizon).toBeUndefined();
    expect(sut.beyondCursor).toBe(false);
  });

  it('forward, takes the oldest after the cursor up to the count; the next is the horizon', () => {
    const sut = selectWindow(entries, { direction: 'forward', count: 2, after: keyOf(1) }, 10_000);

    expect(ids(sut.entries)).toEqual(['m2', 'm3']);
    expect(sut.horizon).toBe(keyOf(4));
    expect(sut.beyondCursor).toBe(true);
  });

  it('backward, takes the newest before the cursor, oldest first; the one before is the horizon', () => {
    const sut = selectWindow(
      entries,
      { direction: 'backward', count: 2, before: keyOf(5) },
      10_000,
    );

    expect(ids(sut.entries)).toEqual(['m3', 'm4']);
    expect(sut.horizon).toBe(keyOf(2));
    expect(sut.beyondCursor).toBe(true);
  });

  it('stops at the byte bound: lines up to it exactly, the next one the horizon', () => {
    const sut = selectWindow(entries, { direction: 'forward', count: 10 }, 300);

    expect(ids(sut.entries)).toEqual(['m1', 'm2', 'm3']);
    expect(sut.horizon).toBe(keyOf(4));
  });

  it('always takes one line, however long', () => {
    const sut = selectWindow([entry(1, 5000), entry(2)], { direction: 'backward', count: 3 }, 100);

    expect(ids(sut.entries)).toEqual(['m2']);
    expect(sut.horizon).toBe(keyOf(1));
    const first = selectWindow([entry(1, 5000), entry(2)], { direction: 'forward', count: 3 }, 100);
    expect(ids(first.entries)).toEqual(['m1']);
  });

  it('keeps to the window: cursors are exclusive at both ends', () => {
    const sut = selectWindow(
      entries,
      { direction: 'forward', count: 10, after: keyOf(2), before: keyOf(5) },
      10_000,
    );

    expect(ids(sut.entries)).toEqual(['m3', 'm4']);
    expect(sut.horizon).toBeUndefined();
  });

  it('says nothing lies beyond the cursor when nothing does, either way', () => {
    expect(
      selectWindow(entries, { direction: 'forward', count: 1, after: keyOf(0) }, 10_000)
        .beyondCursor,
    ).toBe(false);
    expect(
      selectWindow(entries, { direction: 'backward', count: 1, before: keyOf(6) }, 10_000)
        .beyondCursor,
    ).toBe(false);
    expect(
      selectWindow(entries, { direction: 'backward', count: 1, before: keyOf(5) }, 10_000)
        .beyondCursor,
    ).toBe(true);
  });

  it('selects nothing from an empty window', () => {
    const sut = selectWindow(entries, { direction: 'forward', count: 3, after: keyOf(5) }, 10_000);

    expect(sut).toEqual({ entries: [], beyondCursor: true });
  });
});
