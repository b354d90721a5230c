import { JournalIndex } from './journal-index.js';
import { SegmentWatch } from './segment-loss.js';
import { formatSegmentName } from './segment-names.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';

// What SegmentWatch remembers of given-up segments, to tell when one is back.
const names = Array.from({ length: 17 }, (_, sequence) =>
  formatSegmentName(1000, sequence, 'aaaaaaaa'),
);

describe(SegmentWatch.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let sut: SegmentWatch;

  beforeEach(async () => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    sut = new SegmentWatch(files, index);
    for (const name of names) {
      files.put(name, 'x');
      index.addSegment(name, false);
      // Journal-only: no record is held, so a vanished segment loses it.
      index.addLive('s', 0, { segment: name, offset: 0, length: 1 });
      const identity = await files.identity(name);
      sut.watch(name, identity!);
    }
  });

  describe('intact', () => {
    it('says what is wrong with SPOOL_DIR when it hides the segment (chmod 000)', async () => {
      const identity = (await files.identity(names[0]))!;
      const refused = new SpoolDirectoryError('/spool', 'not writable by uid 65534');
      files.failNext('identity', fsError('EACCES', 'lstat'));
      files.failNext('checkDirectory', refused);

      await expect(sut.intact(names[0], identity)).rejects.toBe(refused);
    });

    it('keeps the raw error when the directory itself passes its check', async () => {
      const identity = (await files.identity(names[0]))!;
      const denied = fsError('EPERM', 'lstat');
      files.failNext('identity', denied);

      await expect(sut.intact(names[0], identity)).rejects.toBe(denied);
      expect(files.calls('checkDirectory')).toBe(1);
    });

    it('asks nothing of the directory for another error', async () => {
      const identity = (await files.identity(names[0]))!;
      const broken = fsError('EIO', 'lstat');
      files.failNext('identity', broken);

      await expect(sut.intact(names[0], identity)).rejects.toBe(broken);
      expect(files.calls('checkDirectory')).toBe(0);
    });

    it('is true for the same file and false for another or none', async () => {
      const identity = (await files.identity(names[0]))!;
      expect(await sut.intact(names[0], identity)).toBe(true);
      files.takeAway(names[0]);
      expect(await sut.intact(names[0], identity)).toBe(false);
    });
  });

  it('remembers the 16 newest given-up segments that lost records, and finds each once', async () => {
    const taken = names.map((name) => files.takeAway(name));
    expect(await sut.giveUp(names[0])).toHaveLength(17);
    expect(index.lostRecords).toBe(17);
    expect(await sut.found()).toEqual([]);

    names.forEach((name, at) => files.restore(name, taken[at]));
    const found = await sut.found();

    expect(found).toEqual(names.slice(1).map((name) => ({ name, lost: 1 })));
    expect(index.lostRecords).toBe(1);
    expect(await sut.found()).toEqual([]);
  });

  it('does not remember a segment given up with nothing lost (memory held it all)', async () => {
    const held = formatSegmentName(2000, 0, 'aaaaaaaa');
    files.put(held, 'x');
    index.addSegment(held, false);
    index.addLive('s', 0, { segment: held, offset: 0, length: 1 }, messageRecord('s', 0));
    sut.watch(held, (await files.identity(held))!);
    const file = files.takeAway(held);
    expect(await sut.giveUp(held)).toEqual([{ name: held, what: 'deleted', orphaned: 1, lost: 0 }]);
    files.restore(held, file);

    expect(await sut.found()).toEqual([]);
  });
});
