import { BlockedFiles, type BlockedFile } from './blocked-files.js';

describe(BlockedFiles.name, () => {
  let now: number;
  let told: string[];
  let sut: BlockedFiles;

  beforeEach(() => {
    now = 1000;
    told = [];
    sut = new BlockedFiles(
      {
        blocked: (file: BlockedFile) => told.push(`blocked ${file.source} ${file.reason}`),
        recovered: (file: BlockedFile, downMs: number) =>
          told.push(`recovered ${file.source} after ${downMs}`),
      },
      100,
      350,
      () => now,
    );
  });

  it('lists nothing, and lets every file be tried, at first', () => {
    expect(sut.list()).toEqual([]);
    expect(sut.size).toBe(0);
    expect(sut.due('a')).toBe(true);
    expect(sut.has('a')).toBe(false);
    expect(sut.reasonOf('a')).toBeUndefined();
  });

  it('lists a blocked file with its reason, records and since, telling once', () => {
    sut.block('a', 'EACCES', 3);
    now = 1200;
    sut.block('a', 'EIO', 2);

    expect(sut.list()).toEqual([{ source: 'a', reason: 'EIO', records: 2, since: 1000 }]);
    expect(sut.has('a')).toBe(true);
    expect(sut.reasonOf('a')).toBe('EIO');
    expect(sut.size).toBe(1);
    expect(told).toEqual(['blocked a EACCES']);
  });

  it('waits the base delay after the first failure, doubling after each, up to the cap', () => {
    const waits: number[] = [];
    for (let attempt = 0; attempt < 4; attempt += 1) {
      sut.block('a', 'EIO', null);
      const from = now;
      now = from + 1;
      while (!sut.due('a')) now += 1;
      waits.push(now - from);
    }

    expect(waits).toEqual([100, 200, 350, 350]);
  });

  it('lets a file be tried exactly when its wait is over', () => {
    sut.block('a', 'EIO', null);

    now = 1099;
    expect(sut.due('a')).toBe(false);
    now = 1100;
    expect(sut.due('a')).toBe(true);
  });

  it('clears a file that works again, telling once how long it was down', () => {
    sut.block('a', 'EIO', 1);
    now = 1750;

    sut.clear('a');
    sut.clear('a');

    expect(sut.list()).toEqual([]);
    expect(sut.due('a')).toBe(true);
    expect(told).toEqual(['blocked a EIO', 'recovered a after 750']);
  });

  it('starts the wait over for a file blocked again after it recovered', () => {
    sut.block('a', 'EIO', 1);
    sut.block('a', 'EIO', 1);
    sut.clear('a');
    now = 5000;

    sut.block('a', 'EIO', 1);

    expect(sut.list()[0].since).toBe(5000);
    now = 5100;
    expect(sut.due('a')).toBe(true);
  });

  it('clears nothing, and tells nothing, for a file that was not blocked', () => {
    sut.clear('a');

    expect(told).toEqual([]);
  });

  it('lists the oldest outage first, then by name', () => {
    sut.block('c', 'x', null);
    now = 2000;
    sut.block('b', 'x', null);
    sut.block('a', 'x', null);

    expect(sut.list().map((file) => file.source)).toEqual(['c', 'a', 'b']);
  });
});
