import { BadLineKeeper } from './bad-line-keeper.js';
import { BlockedFiles } from './blocked-files.js';
import { JournalIndex } from './journal-index.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry } from './set-aside-entry.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';

const A = 'journal-000000000001000-000000-dddddddd.jsonl';
const B = 'journal-000000000002000-000000-dddddddd.jsonl';

function badLine(source: string, offset: number): SetAsideEntry {
  return { at: 1, reason: 'torn tail (no newline)', source, offset, raw: `bytes at ${offset}` };
}

describe(BadLineKeeper.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let now: number;
  let blocked: BlockedFiles;
  let reported: (readonly SetAsideEntry[])[];
  let sut: BadLineKeeper;

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    index.addSegment(A, true);
    index.addSegment(B, true);
    now = 0;
    blocked = new BlockedFiles(
      { blocked: () => undefined, recovered: () => undefined },
      100,
      800,
      () => now,
    );
    reported = [];
    sut = new BadLineKeeper(new SetAsideLog(files), index, blocked, (entries) => {
      reported.push(entries);
    });
  });

  it('writes nothing, and keeps nothing, when there is nothing to keep', async () => {
    expect(await sut.keep([])).toEqual({ kept: 0, emptied: [] });
    expect(files.calls('openForAppend')).toBe(0);
    expect(sut.count).toBe(0);
  });

  it('sets the lines aside at once when the log takes them, pinning nothing', async () => {
    expect(await sut.keep([badLine(A, 0)])).toEqual({ kept: 1, emptied: [] });
    expect(index.liveIn(A)).toBe(0);
    expect(reported).toEqual([[badLine(A, 0)]]);
    expect(sut.count).toBe(0);
  });

  it('pins the segments of lines the log cannot take, and lists the log as blocked', async () => {
    files.failNext('openForAppend', fsError('EISDIR', 'open'));

    expect(await sut.keep([badLine(A, 0), badLine(A, 50)])).toEqual({ kept: 0, emptied: [] });

    expect(index.liveIn(A)).toBe(2);
    expect(sut.count).toBe(2);
    expect(reported).toEqual([]);
    expect(blocked.list()).toEqual([
      {
        source: SET_ASIDE_LOG,
        reason: 'cannot be written: EISDIR: failed, open',
        records: 2,
        since: 0,
      },
    ]);
  });

  it('does not try the log again before its backoff is over, pinning what comes meanwhile', async () => {
    files.failNext('openForAppend', fsError('ENOSPC', 'write'));
    await sut.keep([badLine(A, 0)]);
    now = 99;

    expect(await sut.keep([badLine(B, 0)])).toEqual({ kept: 0, emptied: [] });

    expect(files.calls('openForAppend')).toBe(1);
    expect(index.liveIn(B)).toBe(1);
    expect(sut.count).toBe(2);
  });

  it('keeps every waiting line once the log takes them, and names the segments left owing nothing', async () => {
    files.failNext('openForAppend', fsError('ENOSPC', 'write'));
    await sut.keep([badLine(A, 0), badLine(B, 0)]);
    index.addLive('s', 1, { segment: B, offset: 100, length: 10 });
    now = 100;

    expect(await sut.keep([])).toEqual({ kept: 2, emptied: [A] });

    expect(index.liveIn(A)).toBe(0);
    expect(index.liveIn(B)).toBe(1);
    expect(reported).toEqual([[badLine(A, 0), badLine(B, 0)]]);
    expect(blocked.size).toBe(0);
    expect(sut.count).toBe(0);
    expect(files.text(SET_ASIDE_LOG).trim().split('\n')).toHaveLength(2);
  });
});
