import {
  DATABASE_ID_FILE,
  formatSegmentName,
  isOwnFile,
  ownerLockName,
  parseSegmentName,
  SegmentNamer,
  SET_ASIDE_LOG,
  TEMP_PREFIX,
} from './segment-names.js';

const INSTANCE = 'abcdef01';

describe(formatSegmentName.name, () => {
  it('pads the time to 15 digits and the sequence to 6', () => {
    expect(formatSegmentName(1_764_460_800_123, 42, INSTANCE)).toBe(
      'journal-001764460800123-000042-abcdef01.jsonl',
    );
  });

  it('names sort in the order of their time, then their sequence', () => {
    const names = [
      formatSegmentName(999, 999_999, INSTANCE),
      formatSegmentName(1000, 0, INSTANCE),
      formatSegmentName(1000, 9, INSTANCE),
      formatSegmentName(1000, 10, INSTANCE),
      formatSegmentName(10_000, 0, INSTANCE),
    ];

    expect([...names].sort()).toEqual(names);
  });
});

describe(parseSegmentName.name, () => {
  it('reads back what formatSegmentName wrote', () => {
    const name = formatSegmentName(1_764_460_800_123, 42, INSTANCE);

    expect(parseSegmentName(name)).toEqual({
      name,
      ms: 1_764_460_800_123,
      sequence: 42,
      instanceId: INSTANCE,
    });
  });

  it.each([
    ['a time of 14 digits', 'journal-17644608001230-000042-abcdef01.jsonl'],
    ['a sequence of 5 digits', 'journal-001764460800123-00042-abcdef01.jsonl'],
    ['an instance id in capitals', 'journal-001764460800123-000042-ABCDEF01.jsonl'],
    ['an instance id of 7 characters', 'journal-001764460800123-000042-abcdef0.jsonl'],
    ['another extension', 'journal-001764460800123-000042-abcdef01.json'],
    ['a suffix', 'journal-001764460800123-000042-abcdef01.jsonl.bak'],
    ['a prefix', 'old-journal-001764460800123-000042-abcdef01.jsonl'],
    ['the set-aside log', SET_ASIDE_LOG],
    ['the database id', DATABASE_ID_FILE],
    ['an owner lock', 'owner-abcdef01.lock'],
  ])('refuses %s', (_case, name) => {
    expect(parseSegmentName(name)).toBeNull();
  });
});

describe(ownerLockName.name, () => {
  it('names the lock file of an instance', () => {
    expect(ownerLockName(INSTANCE)).toBe('owner-abcdef01.lock');
  });
});

describe(isOwnFile.name, () => {
  it.each([
    ['a segment', formatSegmentName(1, 2, INSTANCE)],
    ['an owner lock', ownerLockName(INSTANCE)],
    ["an owner lock's SQLite journal", `${ownerLockName(INSTANCE)}-journal`],
    ['the set-aside log', SET_ASIDE_LOG],
    ['the database id', DATABASE_ID_FILE],
    ['a temp file', `${TEMP_PREFIX}check-0123456789ab`],
  ])('knows %s as its own', (_case, name) => {
    expect(isOwnFile(name)).toBe(true);
  });

  it.each([
    ['a file of someone else', 'notes.txt'],
    ['the database id with a suffix', `${DATABASE_ID_FILE}.bak`],
    ['a segment with a suffix', `${formatSegmentName(1, 2, INSTANCE)}.bak`],
    ['an owner lock with a suffix', `${ownerLockName(INSTANCE)}.old`],
    ['an owner lock with a prefix', `x${ownerLockName(INSTANCE)}`],
    ['an owner lock of a short id', 'owner-abc.lock'],
    ['a journal suffix inside the name', 'owner-abcdef01-journal.lock'],
    ["a segment's SQLite journal", `${formatSegmentName(1, 2, INSTANCE)}-journal`],
    ["the set-aside log's SQLite journal", `${SET_ASIDE_LOG}-journal`],
    ['a copy of the set-aside log', `${SET_ASIDE_LOG}.1`],
    ['a name ending in the temp prefix', `notes${TEMP_PREFIX}`],
  ])('does not know %s', (_case, name) => {
    expect(isOwnFile(name)).toBe(false);
  });
});

describe(SegmentNamer.name, () => {
  let now: number;
  let sut: SegmentNamer;

  beforeEach(() => {
    now = 5000;
    sut = new SegmentNamer(INSTANCE, () => now);
  });

  it('names a segment after the time it begins, with its instance', () => {
    expect(sut.next()).toBe(formatSegmentName(5000, 0, INSTANCE));
  });

  it('counts up within a millisecond and starts again at 0 in the next', () => {
    const names = [sut.next(), sut.next(), sut.next()];
    now = 5001;
    names.push(sut.next());

    expect(names).toEqual([
      formatSegmentName(5000, 0, INSTANCE),
      formatSegmentName(5000, 1, INSTANCE),
      formatSegmentName(5000, 2, INSTANCE),
      formatSegmentName(5001, 0, INSTANCE),
    ]);
  });

  it('never names a segment below an earlier one when the clock goes back', () => {
    const first = sut.next();
    now = 10;
    const second = sut.next();

    expect(second).toBe(formatSegmentName(5000, 1, INSTANCE));
    expect([second, first].sort()).toEqual([first, second]);
  });

  it('moves to the next millisecond when the sequence runs out', () => {
    sut.floor([formatSegmentName(5000, 999_998, 'feedbeef')]);

    expect([sut.next(), sut.next(), sut.next()]).toEqual([
      formatSegmentName(5000, 999_999, INSTANCE),
      formatSegmentName(5001, 0, INSTANCE),
      formatSegmentName(5001, 1, INSTANCE),
    ]);
  });

  describe('floor', () => {
    it('names segments after the newest one in the directory, of any instance', () => {
      sut.floor([
        formatSegmentName(7000, 3, 'feedbeef'),
        'notes.txt',
        formatSegmentName(9000, 2, 'cafe0001'),
        formatSegmentName(8000, 50, 'feedbeef'),
      ]);

      expect(sut.next()).toBe(formatSegmentName(9000, 3, INSTANCE));
    });

    it('takes the highest sequence within the newest millisecond, in any order', () => {
      sut.floor([
        formatSegmentName(9000, 2, 'feedbeef'),
        formatSegmentName(9000, 7, 'feedbeef'),
        formatSegmentName(9000, 4, 'cafe0001'),
      ]);

      expect(sut.next()).toBe(formatSegmentName(9000, 8, INSTANCE));
    });

    it('starts from the sequence of a newer millisecond, however high an older one went', () => {
      sut.floor([formatSegmentName(8000, 900, 'feedbeef'), formatSegmentName(9000, 2, 'feedbeef')]);

      expect(sut.next()).toBe(formatSegmentName(9000, 3, INSTANCE));
    });

    it('has the clock decide once it is past every name in the directory', () => {
      sut.floor([formatSegmentName(4000, 9, 'feedbeef')]);

      expect(sut.next()).toBe(formatSegmentName(5000, 0, INSTANCE));
    });

    it('never moves the names back below one already issued', () => {
      now = 9000;
      sut.next();
      sut.next();

      sut.floor([formatSegmentName(8000, 5, 'feedbeef'), formatSegmentName(9000, 0, 'feedbeef')]);

      expect(sut.next()).toBe(formatSegmentName(9000, 2, INSTANCE));
    });
  });
});
