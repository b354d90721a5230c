import { jest } from '@jest/globals';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { JournalIndex } from './journal-index.js';
import { SET_ASIDE_LOG } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { setAsideIdOf, type SetAsideEntry } from './set-aside-entry.js';
import { foreignFilesOf, journalableNow, spoolStatusOf } from './spool-status.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { messageRecord } from './testing/records.js';

const A = 'journal-000000000001000-000000-aaaaaaaa.jsonl';
const B = 'journal-000000000002000-000000-aaaaaaaa.jsonl';

describe(spoolStatusOf.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let setAsideLog: SetAsideLog;

  beforeEach(() => {
    files = new FakeJournalFiles('/data/spool');
    index = new JournalIndex();
    setAsideLog = new SetAsideLog(files);
  });

  it('shows an empty, writable spool', () => {
    expect(spoolStatusOf('/data/spool', null, index, setAsideLog, [], [], 10_000)).toEqual({
      path: '/data/spool',
      writable: true,
      error: null,
      messages: 0,
      bytes: 0,
      oldestAgeMs: null,
      sessions: [],
      setAside: [],
      setAsideCount: 0,
      lostRecords: 0,
      buffered: 0,
      blocked: [],
    });
  });

  it('counts what a vanished segment held in memory as buffered, not as messages on disk', () => {
    const held = messageRecord('s', 0);
    index.addLive('s', 1000, { segment: A, offset: 0, length: 100 }, held);
    index.addLive('s', 1000, { segment: A, offset: 100, length: 100 }, messageRecord('s', 1));
    const journalOnly = messageRecord('s', 2);
    index.addLive('s', 1000, { segment: A, offset: 200, length: 100 });
    index.addJournalOnly([{ ...journalOnly, location: { segment: A, offset: 200, length: 100 } }]);
    index.addLive('s', 1000, { segment: B, offset: 0, length: 100 });
    index.dropSegment(A);

    const status = spoolStatusOf('/data/spool', null, index, setAsideLog, [], [], 10_000);

    expect(status).toMatchObject({ messages: 1, buffered: 2, lostRecords: 1 });
  });

  it('lists the blocked files as given, apart from what was set aside', () => {
    const blocked = [
      { source: A, reason: 'segment unreadable: EACCES', records: 3, since: 100 },
      { source: 'owner-dddddddd.lock', reason: 'lock file unusable', records: null, since: 200 },
    ];

    const status = spoolStatusOf('/data/spool', null, index, setAsideLog, [], blocked, 10_000);

    expect(status.blocked).toEqual(blocked);
    expect(status.blocked).not.toBe(blocked);
    expect(status.setAside).toEqual([]);
    expect(status.setAsideCount).toBe(0);
  });

  it('shows what is owed: messages, bytes, the age of the oldest, per session', () => {
    index.addLive('zulu', 4000, { segment: A, offset: 0, length: 100 });
    index.addLive('alpha', 2500, { segment: A, offset: 100, length: 50 });
    index.addLive('zulu', 9000, { segment: B, offset: 0, length: 70 });

    const status = spoolStatusOf('/data/spool', null, index, setAsideLog, [], [], 10_000);

    expect(status).toMatchObject({
      messages: 3,
      bytes: 220,
      oldestAgeMs: 7500,
      sessions: [
        { sessionId: 'alpha', messages: 1 },
        { sessionId: 'zulu', messages: 2 },
      ],
    });
  });

  it('never shows a negative age when the clock went back', () => {
    index.addLive('s', 12_000, { segment: A, offset: 0, length: 100 });

    expect(spoolStatusOf('/data/spool', null, index, setAsideLog, [], [], 10_000).oldestAgeMs).toBe(
      0,
    );
  });

  it('shows the error when the spool cannot be written', () => {
    const status = spoolStatusOf(
      '/data/spool',
      'EACCES: permission denied',
      index,
      setAsideLog,
      [],
    );

    expect(status).toMatchObject({ writable: false, error: 'EACCES: permission denied' });
  });

  it('lists what was set aside, then the foreign files, and counts both', async () => {
    const entries: SetAsideEntry[] = [
      { at: 1, reason: 'torn tail (no newline)', source: A, offset: 300, raw: '{"crc' },
      {
        at: 2,
        reason: 'refused by the database: too long',
        source: B,
        sessionId: 's',
        messageId: 'm-1',
      },
    ];
    files.put(
      SET_ASIDE_LOG,
      `${JSON.stringify({ at: 0, reason: 'older', source: A })}\n${entries
        .map((entry) => JSON.stringify(entry))
        .join('\n')}\n`,
    );
    await setAsideLog.load();

    const status = spoolStatusOf(
      '/data/spool',
      null,
      index,
      setAsideLog,
      foreignFilesOf(['notes.txt'], []),
    );

    const idOf = (entry: object) => setAsideIdOf(JSON.stringify(entry));
    expect(status.setAside).toEqual([
      {
        id: idOf({ at: 0, reason: 'older', source: A }),
        source: A,
        reason: 'older',
        at: 0,
        sessionId: null,
        messageId: null,
      },
      {
        id: idOf(entries[0]),
        source: A,
        reason: 'torn tail (no newline)',
        at: 1,
        sessionId: null,
        messageId: null,
      },
      {
        id: idOf(entries[1]),
        source: B,
        reason: 'refused by the database: too long',
        at: 2,
        sessionId: 's',
        messageId: 'm-1',
      },
      {
        id: null,
        source: 'notes.txt',
        reason: 'not a file of the journal: left untouched',
        at: null,
        sessionId: null,
        messageId: null,
      },
    ]);
    expect(status.setAsideCount).toBe(4);
  });

  it('counts every entry of the log, beyond the ones it lists', async () => {
    const lines = Array.from({ length: 120 }, (_, at) =>
      JSON.stringify({ at, reason: 'r', source: A }),
    );
    files.put(SET_ASIDE_LOG, `${lines.join('\n')}\n`);
    await setAsideLog.load();

    const status = spoolStatusOf(
      '/data/spool',
      null,
      index,
      setAsideLog,
      foreignFilesOf(['x'], [{ name: 'y', kind: 'symlink' }]),
    );

    expect(status.setAside).toHaveLength(102);
    expect(status.setAside[0].at).toBe(20);
    expect(status.setAsideCount).toBe(122);
  });

  it('takes the time now by default', () => {
    const acceptedAt = Date.now() - 1_000_000;
    index.addLive('s', acceptedAt, { segment: A, offset: 0, length: 100 });

    const age = spoolStatusOf('/data/spool', null, index, setAsideLog, []).oldestAgeMs;

    expect(age).toBeGreaterThanOrEqual(1_000_000);
    expect(age).toBeLessThan(1_000_000 + 60_000);
  });

  describe('foreignFilesOf', () => {
    it('gives each irregular entry its kind as the reason, after the foreign files', () => {
      expect(
        foreignFilesOf(
          ['notes.txt'],
          [
            { name: 'journal-1.jsonl', kind: 'symlink' },
            { name: 'set-aside.jsonl', kind: 'directory' },
            { name: 'fifo', kind: 'other' },
          ],
        ),
      ).toEqual([
        { name: 'notes.txt', reason: 'not a file of the journal: left untouched' },
        {
          name: 'journal-1.jsonl',
          reason: 'symlink: not a regular file, left untouched (nothing in or behind it is read)',
        },
        {
          name: 'set-aside.jsonl',
          reason: 'directory: not a regular file, left untouched (nothing in or behind it is read)',
        },
        {
          name: 'fifo',
          reason: 'other: not a regular file, left untouched (nothing in or behind it is read)',
        },
      ]);
    });
  });

  it('shows the records lost with vanished segments', () => {
    index.addLive('s', 1, { segment: A, offset: 0, length: 10 });
    index.addJournalOnly([
      {
        id: 'm',
        sessionId: 's',
        orderKey: 'k',
        acceptedAt: 1,
        location: { segment: A, offset: 0, length: 10 },
      },
    ]);
    expect(spoolStatusOf('/data/spool', null, index, setAsideLog, []).lostRecords).toBe(0);

    index.dropSegment(A);

    const status = spoolStatusOf('/data/spool', null, index, setAsideLog, []);
    expect(status.lostRecords).toBe(1);
    expect(status.messages).toBe(0);
  });
});

describe('journalableNow', () => {
  const refused = new SpoolDirectoryError('/data/spool', 'not writable by uid 65534');
  const pass = () => Promise.resolve();

  it('is writable with no error when both checks pass', async () => {
    expect(await journalableNow(pass, pass, () => false)).toEqual({ writable: true, error: null });
  });

  it('is writable while the open segment takes appends in a directory refusing new ones', async () => {
    const result = await journalableNow(
      pass,
      () => Promise.reject(refused),
      () => true,
    );

    expect(result).toEqual({
      writable: true,
      error: expect.stringContaining('/data/spool is not writable'),
    });
  });

  it('is not writable when no segment is open in a refused directory', async () => {
    const result = await journalableNow(
      pass,
      () => Promise.reject(refused),
      () => false,
    );

    expect(result.writable).toBe(false);
    expect(result.error).toContain(ScribeErrorCode.SpoolDirUnusable);
  });

  it('is not writable when the files fail otherwise (a full disk), open segment or not', async () => {
    const full = Object.assign(new Error('ENOSPC: no room'), { code: 'ENOSPC' });
    const result = await journalableNow(
      pass,
      () => Promise.reject(full),
      () => true,
    );

    expect(result).toEqual({ writable: false, error: expect.stringContaining('ENOSPC') });
  });

  it('is not writable when the journal check fails, and the files are not asked', async () => {
    const files = jest.fn(pass);
    const result = await journalableNow(
      () => Promise.reject(refused),
      files,
      () => true,
    );

    expect(result.writable).toBe(false);
    expect(result.error).toContain('not writable by uid 65534');
    expect(files).not.toHaveBeenCalled();
  });
});
