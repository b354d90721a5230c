import { createHash } from 'node:crypto';
import { SET_ASIDE_LOG } from './segment-names.js';
import { RECENT_LIMIT, SetAsideLog } from './set-aside-log.js';
import { rawField, setAsideIdOf, type SetAsideEntry } from './set-aside-entry.js';
import { LINE_READ_BYTES } from './line-scan.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';

function entry(number: number, extra: Partial<SetAsideEntry> = {}): SetAsideEntry {
  return { at: 1000 + number, reason: `reason ${number}`, source: 'segment', ...extra };
}

/** The file as lines of JSON (it ends with a newline). */
function linesOf(files: FakeJournalFiles): unknown[] {
  const text = files.text(SET_ASIDE_LOG);
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe(SetAsideLog.name, () => {
  let files: FakeJournalFiles;
  let sut: SetAsideLog;

  beforeEach(() => {
    files = new FakeJournalFiles();
    sut = new SetAsideLog(files);
  });

  describe('append', () => {
    it('appends one JSON line per entry, synced, and counts them', async () => {
      const record = messageRecord('s', 1);
      const entries = [
        entry(1, { offset: 40, sessionId: 's', messageId: record.id, record }),
        entry(2, { raw: 'torn {"crc' }),
      ];

      await sut.append(entries);

      expect(linesOf(files)).toEqual(entries);
      expect(files.log).toEqual([
        `openForAppend ${SET_ASIDE_LOG}`,
        `write ${SET_ASIDE_LOG}@0+${files.bytes(SET_ASIDE_LOG).length}`,
        `sync ${SET_ASIDE_LOG}`,
        `close ${SET_ASIDE_LOG}`,
      ]);
      expect(sut.count).toBe(2);
      expect(sut.recent()).toEqual(entries);
    });

    it('appends after what the file already holds', async () => {
      await sut.append([entry(1)]);

      await sut.append([entry(2), entry(3)]);

      expect(linesOf(files)).toEqual([entry(1), entry(2), entry(3)]);
      expect(sut.count).toBe(3);
      expect(sut.recent()).toEqual([entry(1), entry(2), entry(3)]);
    });

    it('touches no file for no entries', async () => {
      await sut.append([]);

      expect(files.log).toEqual([]);
      expect(sut.count).toBe(0);
    });

    it('keeps the newest 100 entries for the admin view, and counts all', async () => {
      const entries = Array.from({ length: 130 }, (_, number) => entry(number));

      await sut.append(entries.slice(0, 70));
      await sut.append(entries.slice(70));

      expect(sut.count).toBe(130);
      expect(sut.recent()).toEqual(entries.slice(30));
    });

    it('cuts a torn write back off and rejects, counting nothing', async () => {
      await sut.append([entry(1)]);
      const size = files.bytes(SET_ASIDE_LOG).length;
      const full = fsError('ENOSPC');
      files.tearNextWrite(7, full);

      await expect(sut.append([entry(2)])).rejects.toBe(full);

      expect(files.log.slice(4)).toEqual([
        `openForAppend ${SET_ASIDE_LOG}`,
        // Does the file end in a newline? (It does: no newline is written first.)
        `readRanges ${SET_ASIDE_LOG} ${size - 1}+1`,
        `write ${SET_ASIDE_LOG}@${size}+7`,
        `truncate ${SET_ASIDE_LOG} ${size}`,
        `close ${SET_ASIDE_LOG}`,
      ]);
      expect(linesOf(files)).toEqual([entry(1)]);
      expect(sut.count).toBe(1);
      expect(sut.recent()).toEqual([entry(1)]);
    });

    it('cuts the entries back off when the sync fails, and rejects', async () => {
      const eio = fsError('EIO', 'fdatasync');
      files.failNext('sync', eio);

      await expect(sut.append([entry(1)])).rejects.toBe(eio);

      expect(files.bytes(SET_ASIDE_LOG)).toEqual(Buffer.alloc(0));
      expect(files.log.slice(-2)).toEqual([
        `truncate ${SET_ASIDE_LOG} 0`,
        `close ${SET_ASIDE_LOG}`,
      ]);
      expect(sut.count).toBe(0);
    });

    it('rejects with the write error when the cut fails too, and still closes the file', async () => {
      const full = fsError('ENOSPC');
      files.tearNextWrite(3, full);
      files.failNext('truncate', fsError('EIO', 'ftruncate'));

      await expect(sut.append([entry(1)])).rejects.toBe(full);

      expect(files.log.at(-1)).toBe(`close ${SET_ASIDE_LOG}`);
      expect(sut.count).toBe(0);
    });

    it('keeps synced entries when only the close fails: they are not written again', async () => {
      files.failNext('close', fsError('EIO', 'close'), SET_ASIDE_LOG);

      await sut.append([entry(1)]);

      expect(sut.count).toBe(1);
      expect(files.bytes(SET_ASIDE_LOG).toString('utf8')).toBe(`${JSON.stringify(entry(1))}\n`);
    });

    it('rejects when the file cannot be opened', async () => {
      const denied = fsError('EACCES', 'open');
      files.failNext('openForAppend', denied);

      await expect(sut.append([entry(1)])).rejects.toBe(denied);
      expect(sut.count).toBe(0);
    });

    it('never cuts away the entries of an append that ran at the same time', async () => {
      // Both open the file at the same size; the second one's write fails after the first's
      // entries are synced: cutting back to the size it saw would throw those away.
      const firstWrite = files.holdNext('write');
      const secondWrite = files.holdNext('write');
      const first = sut.append([entry(1)]);
      const second = sut.append([entry(2)]);
      firstWrite.resolve();
      await first;
      files.tearNextWrite(5);
      secondWrite.resolve();

      await expect(second).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(linesOf(files)).toEqual([entry(1)]);
      expect(sut.count).toBe(1);
    });
  });

  describe('load', () => {
    it('counts what earlier runs set aside, and shows the newest 100', async () => {
      const entries = Array.from({ length: 150 }, (_, number) => entry(number));
      files.put(SET_ASIDE_LOG, entries.map((one) => `${JSON.stringify(one)}\n`).join(''));

      await sut.load();

      expect(sut.count).toBe(150);
      expect(sut.recent()).toEqual(entries.slice(50));
    });

    it('skips lines that are JSON but no entry, and warns how many are objects', async () => {
      const logs = new CapturingLogger();
      Logger.overrideLogger(logs);
      try {
        files.put(
          SET_ASIDE_LOG,
          [
            'null',
            '42',
            '"text"',
            'true',
            '[]',
            '{}',
            '{"resolved":5}',
            '{"at":"1","reason":"r","source":"s"}',
            '{"at":1,"reason":2,"source":"s"}',
            '{"at":1,"reason":"r"}',
            JSON.stringify(entry(1)),
          ].join('\n') + '\n',
        );

        await sut.load();

        expect(sut.count).toBe(1);
        expect(sut.recent()).toEqual([entry(1)]);
        expect(
          logs.lines.map(({ level, message, params }) => [level, message, params.at(-1)]),
        ).toEqual([
          [
            'warn',
            '6 line(s) of /spool/set-aside.jsonl are JSON but neither an entry nor a resolution: left as they are, neither counted nor listed',
            'Journal',
          ],
        ]);
      } finally {
        Logger.overrideLogger(new ConsoleLogger());
      }
    });

    it('reads no entries when every one was closed', async () => {
      await sut.append([entry(1)]);
      await sut.resolve(sut.recentOpen()[0].id, 'dropped');
      const again = new SetAsideLog(files);
      const reads = files.calls('readRanges');

      await again.load();

      expect(again.count).toBe(0);
      // The scan's one read; no second one for entries to show.
      expect(files.calls('readRanges')).toBe(reads + 1);
    });

    it('skips a torn last line and empty lines', async () => {
      files.put(
        SET_ASIDE_LOG,
        `${JSON.stringify(entry(1))}\n\n${JSON.stringify(entry(2))}\n{"at":3,"rea`,
      );

      await sut.load();

      expect(sut.count).toBe(2);
      expect(sut.recent()).toEqual([entry(1), entry(2)]);
    });

    it('finds nothing when there is no log', async () => {
      await sut.load();

      expect(sut.count).toBe(0);
      expect(sut.recent()).toEqual([]);
    });

    it('finds nothing when the log cannot be read, and says so at ERROR', async () => {
      const logs = new CapturingLogger();
      Logger.overrideLogger(logs);
      try {
        files.put(SET_ASIDE_LOG, `${JSON.stringify(entry(1))}\n`);
        files.failNext('readRanges', fsError('EIO', 'read'));

        await sut.load();

        expect(sut.count).toBe(0);
        expect(logs.lines.map(({ params }) => params.at(-1))).toEqual(['Journal']);
        expect(logs.messages('error')).toEqual([
          expect.stringMatching(
            /^Could not read \/spool\/set-aside\.jsonl: EIO: i\/o error, read; what earlier runs set aside there is neither counted nor listed/,
          ),
        ]);
      } finally {
        Logger.overrideLogger(new ConsoleLogger());
      }
    });

    it('says nothing when there is no log yet', async () => {
      const logs = new CapturingLogger();
      Logger.overrideLogger(logs);
      try {
        await sut.load();
        expect(logs.lines).toEqual([]);
      } finally {
        Logger.overrideLogger(new ConsoleLogger());
      }
    });

    it('counts appends on top of what it loaded', async () => {
      files.put(SET_ASIDE_LOG, `${JSON.stringify(entry(1))}\n`);
      await sut.load();

      await sut.append([entry(2)]);

      expect(sut.count).toBe(2);
      expect(sut.recent()).toEqual([entry(1), entry(2)]);
    });
  });
});

describe(`${SetAsideLog.name} ids and resolutions`, () => {
  let files: FakeJournalFiles;
  let sut: SetAsideLog;

  beforeEach(() => {
    files = new FakeJournalFiles();
    sut = new SetAsideLog(files);
  });

  it('takes an id as the first 16 hex digits of the SHA-256 of the line, as earlier versions did', () => {
    const line = JSON.stringify(entry(1));
    expect(setAsideIdOf(line)).toBe(createHash('sha256').update(line).digest('hex').slice(0, 16));
  });

  it('names each entry by a hash of its line, the same after a restart', async () => {
    await sut.append([entry(1), entry(2)]);
    const ids = sut.recentOpen().map((open) => open.id);

    const again = new SetAsideLog(files);
    await again.load();

    expect(ids).toEqual([
      setAsideIdOf(JSON.stringify(entry(1))),
      setAsideIdOf(JSON.stringify(entry(2))),
    ]);
    expect(ids[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(again.recentOpen().map((open) => open.id)).toEqual(ids);
    expect((await sut.find(ids[1]))?.entry).toEqual(entry(2));
  });

  it('closes an entry with a synced line after it, keeping its own line, and counts it no more', async () => {
    await sut.append([entry(1), entry(2)]);
    const [first, second] = sut.recentOpen().map((open) => open.id);

    await sut.resolve(first, 'dropped', 5000);

    expect(linesOf(files)).toEqual([
      entry(1),
      entry(2),
      { resolved: first, action: 'dropped', at: 5000 },
    ]);
    expect(files.log.slice(-2)).toEqual([`sync ${SET_ASIDE_LOG}`, `close ${SET_ASIDE_LOG}`]);
    expect(sut.count).toBe(1);
    expect(sut.recent()).toEqual([entry(2)]);
    expect(await sut.find(first)).toBeUndefined();

    const again = new SetAsideLog(files);
    await again.load();
    expect(again.count).toBe(1);
    expect(again.recentOpen()).toEqual([{ id: second, entry: entry(2) }]);
  });

  it('keeps the entry open when the resolution cannot be written', async () => {
    await sut.append([entry(1)]);
    const [id] = sut.recentOpen().map((open) => open.id);
    const full = fsError('ENOSPC');
    files.tearNextWrite(3, full);

    await expect(sut.resolve(id, 'redriven')).rejects.toBe(full);

    expect(linesOf(files)).toEqual([entry(1)]);
    expect(sut.count).toBe(1);
    expect((await sut.find(id))?.entry).toEqual(entry(1));
  });
});

describe(`${SetAsideLog.name} with more open entries than the view holds`, () => {
  let files: FakeJournalFiles;
  let sut: SetAsideLog;
  const entries = Array.from({ length: RECENT_LIMIT + 50 }, (_, number) => entry(number));
  const ids = entries.map((one) => setAsideIdOf(JSON.stringify(one)));

  beforeEach(async () => {
    files = new FakeJournalFiles();
    files.put(SET_ASIDE_LOG, entries.map((one) => `${JSON.stringify(one)}\n`).join(''));
    sut = new SetAsideLog(files);
    await sut.load();
  });

  it('reads the log in chunks, never whole', () => {
    expect(files.calls('read')).toBe(0);
    expect(files.calls('readRanges')).toBeGreaterThan(0);
  });

  it('fills the view again from older entries as the newest are closed', async () => {
    for (const id of ids.slice(-10)) await sut.resolve(id, 'dropped');
    // Each close read the one entry it brought in, no more: the last one, entries[40].
    const offset = entries
      .slice(0, 40)
      .reduce((sum, one) => sum + JSON.stringify(one).length + 1, 0);
    expect(files.log.filter((line) => line.startsWith('readRanges')).slice(-1)).toEqual([
      `readRanges ${SET_ASIDE_LOG} ${offset}+${LINE_READ_BYTES}`,
    ]);

    expect(sut.count).toBe(RECENT_LIMIT + 40);
    expect(sut.recentOpen()).toEqual(
      entries.slice(40, -10).map((one, index) => ({ id: ids[40 + index], entry: one })),
    );
  });

  it('finds an entry of the view without reading the file', async () => {
    const reads = files.calls('readRanges');
    expect(await sut.find(ids.at(-1) as string)).toEqual({
      id: ids.at(-1),
      entry: entries.at(-1),
    });
    expect(files.calls('readRanges')).toBe(reads);
  });

  it('finds entries it appended itself once they are older than the view', async () => {
    const fresh = new SetAsideLog(new FakeJournalFiles());
    const more = Array.from({ length: RECENT_LIMIT + 5 }, (_, number) =>
      entry(number, { reason: `é ${'x'.repeat(number)}` }),
    );
    await fresh.append(more.slice(0, 3));
    await fresh.append(more.slice(3));

    for (const index of [0, 1, 2, 3, 4]) {
      const id = setAsideIdOf(JSON.stringify(more[index]));
      expect(await fresh.find(id)).toEqual({ id, entry: more[index] });
    }
  });

  it('finds an entry older than the view, from the file, and closes it', async () => {
    expect(sut.recentOpen().map((open) => open.id)).not.toContain(ids[3]);

    expect(await sut.find(ids[3])).toEqual({ id: ids[3], entry: entries[3] });
    await sut.resolve(ids[3], 'redriven');

    expect(sut.count).toBe(RECENT_LIMIT + 49);
    expect(await sut.find(ids[3])).toBeUndefined();
    // The view did not lose one of its own.
    expect(sut.recent()).toEqual(entries.slice(50));
    const again = new SetAsideLog(files);
    await again.load();
    expect(again.count).toBe(RECENT_LIMIT + 49);
  });

  it('rejects a find of an older entry whose line is not where it was (the log rewritten)', async () => {
    files.put(
      SET_ASIDE_LOG,
      entries.map((one) => `${JSON.stringify({ ...one, at: 0 })}\n`).join(''),
    );
    await expect(sut.find(ids[0])).rejects.toThrow(
      `/spool/set-aside.jsonl changed under the running instance: entry ${ids[0]} is no longer where it was written; restart to read it again`,
    );
  });

  it('rejects a find of an older entry when the file cannot be read', async () => {
    files.failNext('readRanges', fsError('EIO', 'read'));
    await expect(sut.find(ids[0])).rejects.toMatchObject({ code: 'EIO' });
  });

  it('keeps a close written when the view cannot be filled again, and says so', async () => {
    const logs = new CapturingLogger();
    Logger.overrideLogger(logs);
    try {
      // The read after the resolution is synced fails (the one before it checks the tail).
      const synced = files.holdNext('sync');
      const resolving = sut.resolve(ids.at(-1) as string, 'dropped');
      await files.reached('sync', files.calls('sync') + 1);
      files.failNext('readRanges', fsError('EIO', 'read'));
      synced.resolve();
      await resolving;

      expect(sut.count).toBe(RECENT_LIMIT + 49);
      expect(sut.recent()).toEqual(entries.slice(50, -1));
      expect(logs.lines.map(({ params }) => params.at(-1))).toEqual(['Journal']);
      expect(logs.messages('warn')).toEqual([
        expect.stringMatching(
          /^Could not read older set-aside entries from \/spool\/set-aside\.jsonl for the admin view: EIO/,
        ),
      ]);
      // The next close fills it.
      await sut.resolve(ids.at(-2) as string, 'dropped');
      expect(sut.recent()).toEqual(entries.slice(48, -2));
    } finally {
      Logger.overrideLogger(new ConsoleLogger());
    }
  });

  it('reads nothing to close an entry while the view stays full', async () => {
    const extra = entry(999);
    await sut.append([extra]);
    const reads = files.log.length;
    const size = files.bytes(SET_ASIDE_LOG).length;
    // The view is the newest RECENT_LIMIT of RECENT_LIMIT + 51: closing the oldest open one
    // (outside it) leaves it full.
    await sut.resolve(ids[0], 'dropped');
    // Only the write's look at the last byte.
    expect(files.log.slice(reads).filter((line) => line.startsWith('readRanges'))).toEqual([
      `readRanges ${SET_ASIDE_LOG} ${size - 1}+1`,
    ]);
  });
});

describe(`${SetAsideLog.name} not loaded (its log unread at start)`, () => {
  it('appends after what the file holds, as it is', async () => {
    const files = new FakeJournalFiles();
    files.put(SET_ASIDE_LOG, `${JSON.stringify(entry(1))}\n`);
    await new SetAsideLog(files).append([entry(2)]);
    expect(linesOf(files)).toEqual([entry(1), entry(2)]);
  });
});

describe(`${SetAsideLog.name} with its tail cut under the running instance`, () => {
  it('starts the next line on a line of its own: the close it writes counts after a restart', async () => {
    const files = new FakeJournalFiles();
    const sut = new SetAsideLog(files);
    await sut.load();
    await sut.append([entry(1), entry(2)]);
    const [first] = sut.recentOpen().map((open) => open.id);
    // Someone (or a failed write whose cut failed too) leaves a line torn.
    const text = files.text(SET_ASIDE_LOG);
    files.put(SET_ASIDE_LOG, text.slice(0, -5));

    await sut.resolve(first, 'dropped', 7);

    expect(files.text(SET_ASIDE_LOG)).toBe(
      `${text.slice(0, -5)}\n${JSON.stringify({ resolved: first, action: 'dropped', at: 7 })}\n`,
    );
    const again = new SetAsideLog(files);
    await again.load();
    expect(again.count).toBe(0);
  });
});

describe(`${SetAsideLog.name} after a line torn by a crash`, () => {
  it('writes the next line on a line of its own, and both runs read it', async () => {
    const files = new FakeJournalFiles();
    files.put(SET_ASIDE_LOG, `${JSON.stringify(entry(1))}\n{"at":2,"rea`);
    const sut = new SetAsideLog(files);
    await sut.load();

    await sut.append([entry(3)]);
    await sut.append([entry(4)]);

    expect(files.text(SET_ASIDE_LOG)).toBe(
      `${JSON.stringify(entry(1))}\n{"at":2,"rea\n${JSON.stringify(entry(3))}\n${JSON.stringify(entry(4))}\n`,
    );
    const again = new SetAsideLog(files);
    await again.load();
    expect(again.recent()).toEqual([entry(1), entry(3), entry(4)]);
    // Found where it was written, once older than the view.
    await sut.append(Array.from({ length: RECENT_LIMIT }, (_, number) => entry(100 + number)));
    const third = setAsideIdOf(JSON.stringify(entry(3)));
    expect(sut.recentOpen().some((open) => open.id === third)).toBe(false);
    expect((await sut.find(third))?.entry).toEqual(entry(3));
    expect((await again.find(setAsideIdOf(JSON.stringify(entry(3)))))?.entry).toEqual(entry(3));
    expect((await sut.find(setAsideIdOf(JSON.stringify(entry(4)))))?.entry).toEqual(entry(4));
  });
});

describe(rawField.name, () => {
  it('keeps bytes that are UTF-8 as text', () => {
    expect(rawField(Buffer.from('torn {"crc":"ab" é 😀', 'utf8'))).toEqual({
      raw: 'torn {"crc":"ab" é 😀',
    });
  });

  it('keeps no bytes as empty text', () => {
    expect(rawField(Buffer.alloc(0))).toEqual({ raw: '' });
  });

  it.each([
    ['a byte that is never UTF-8', Buffer.from([0x61, 0xff, 0x62])],
    ['a character cut in half', Buffer.from('é', 'utf8').subarray(0, 1)],
    ['an encoded lone surrogate', Buffer.from([0xed, 0xa0, 0x80])],
  ])('keeps %s as base64', (_case, bytes) => {
    expect(rawField(bytes)).toEqual({ rawBase64: bytes.toString('base64') });
  });
});
