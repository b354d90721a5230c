import { ConsoleLogger, Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { type MessageRecord } from '../message/message-record.js';
import { encodeJournalLine } from './journal-codec.js';
import { type Journal } from './journal.js';
import { type JournaledRecord } from './journaled-record.js';
import { type JournalAppend } from './journal-writer.js';
import { SetAsideActions, recordOfEntry } from './set-aside-actions.js';
import { SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry, setAsideIdOf } from './set-aside-entry.js';
import { type SpoolService } from './spool.service.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';

/** The spool as SetAsideActions uses it: appends answered as told, retries counted. */
class FakeSpool {
  answer: JournalAppend = {
    kind: 'written',
    locations: [{ segment: 'seg', offset: 0, length: 9 }],
  };
  appended: MessageRecord[][] = [];
  retries = 0;

  append(records: MessageRecord[]): Promise<JournalAppend> {
    this.appended.push(records);
    return Promise.resolve(this.answer);
  }

  retryNow(): void {
    this.retries += 1;
  }
}

class FakeJournal {
  released: JournaledRecord[] = [];

  release(records: readonly JournaledRecord[]): Promise<void> {
    this.released.push(...records);
    return Promise.resolve();
  }
}

const refused = (record: MessageRecord): SetAsideEntry => ({
  at: 1,
  reason: 'refused by the database: no',
  source: 'memory',
  sessionId: record.sessionId,
  messageId: record.id,
  record,
});
const torn: SetAsideEntry = { at: 2, reason: 'checksum mismatch', source: 'seg', raw: '{"crc"' };

describe(SetAsideActions.name, () => {
  let files: FakeJournalFiles;
  let log: SetAsideLog;
  let spool: FakeSpool;
  let journal: FakeJournal;
  let sut: SetAsideActions;
  const record = messageRecord('s', 1);

  beforeEach(async () => {
    files = new FakeJournalFiles();
    log = new SetAsideLog(files);
    await log.append([refused(record), torn]);
    spool = new FakeSpool();
    journal = new FakeJournal();
    sut = new SetAsideActions(log, spool as unknown as SpoolService, journal as unknown as Journal);
  });

  const idOf = (index: number) => log.recentOpen()[index].id;

  it('acts on an entry older than the admin view, read from the log', async () => {
    const older = Array.from({ length: 120 }, (_, number) => ({ ...torn, at: 100 + number }));
    await log.append(older);
    const oldest = setAsideIdOf(JSON.stringify(refused(record)));
    expect(log.recentOpen().some((open) => open.id === oldest)).toBe(false);

    expect(await sut.redrive(oldest)).toEqual({
      kind: 'done',
      id: oldest,
      entry: refused(record),
    });
    expect(spool.appended).toEqual([[record]]);
    expect(await log.find(oldest)).toBeUndefined();
  });

  it('answers unavailable, changing nothing, when the entry cannot be read from the log', async () => {
    const older = Array.from({ length: 120 }, (_, number) => ({ ...torn, at: 100 + number }));
    await log.append(older);
    const oldest = setAsideIdOf(JSON.stringify(refused(record)));

    for (const action of ['redrive', 'drop'] as const) {
      files.failNext('readRanges', fsError('EIO', 'read'));
      expect(await sut[action](oldest)).toEqual({
        kind: 'unavailable',
        id: oldest,
        reason: 'EIO: i/o error, read',
      });
    }
    expect(spool.appended).toEqual([]);
    expect(log.count).toBe(122);
  });

  it('re-drives a record: journals it, hands it to the drain, closes the entry, retries now', async () => {
    const id = idOf(0);

    const outcome = await sut.redrive(id);

    expect(outcome).toEqual({ kind: 'done', id, entry: refused(record) });
    expect(spool.appended).toEqual([[record]]);
    expect(journal.released).toEqual([
      { record, location: { segment: 'seg', offset: 0, length: 9 } },
    ]);
    expect(await log.find(id)).toBeUndefined();
    expect(spool.retries).toBe(1);
  });

  it('refuses to re-drive bytes that are still no record, and changes nothing', async () => {
    const id = idOf(1);

    const outcome = await sut.redrive(id);

    expect(outcome).toEqual({
      kind: 'malformed',
      id,
      reason: 'not a journal record (no checksum prefix)',
    });
    expect(spool.appended).toEqual([]);
    expect(await log.find(id)).toBeDefined();
  });

  it('keeps the entry open when the journal cannot take the record', async () => {
    spool.answer = { kind: 'unavailable', error: fsError('ENOSPC') };
    const id = idOf(0);

    const outcome = await sut.redrive(id);

    expect(outcome).toMatchObject({ kind: 'unavailable', id });
    expect(journal.released).toEqual([]);
    expect(await log.find(id)).toBeDefined();
    expect(spool.retries).toBe(0);
  });

  it('drops an entry: closed, nothing journaled', async () => {
    const id = idOf(1);

    expect(await sut.drop(id)).toEqual({ kind: 'done', id, entry: torn });
    expect(await sut.drop(id)).toEqual({ kind: 'not-found', id });
    expect(spool.appended).toEqual([]);
    expect(log.count).toBe(1);
  });

  it('acts once on an entry asked twice at once: the second finds it closed', async () => {
    const id = idOf(0);

    const [redriven, dropped, again] = await Promise.all([
      sut.redrive(id),
      sut.drop(id),
      sut.redrive(id),
    ]);

    expect([redriven.kind, dropped.kind, again.kind]).toEqual(['done', 'not-found', 'not-found']);
    expect(spool.appended).toEqual([[record]]);
    expect(log.count).toBe(1);
  });

  it('answers a re-drive done once the record is journaled, though its entry cannot be closed', async () => {
    const id = idOf(0);
    files.failNext('write', fsError('EIO'));

    const outcome = await sut.redrive(id);

    expect(outcome).toEqual({ kind: 'done', id, entry: refused(record) });
    expect(spool.appended).toEqual([[record]]);
    expect(spool.retries).toBe(1);
    expect(await log.find(id)).toBeDefined();
  });

  it('answers a drop unavailable, the entry still open, when its close cannot be written', async () => {
    const id = idOf(1);
    files.failNext('write', fsError('EIO'));

    expect(await sut.drop(id)).toEqual({
      kind: 'unavailable',
      id,
      reason: 'EIO: i/o error, write',
    });
    expect((await log.find(id))?.entry).toEqual(torn);
  });

  describe('log lines', () => {
    let logs: CapturingLogger;
    beforeEach(() => {
      logs = new CapturingLogger();
      Logger.overrideLogger(logs);
    });
    afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

    const lines = () =>
      logs.lines.map(({ level, message, params }) => ({ level, message, context: params[0] }));

    it('says what a re-drive put back, and why it had been set aside', async () => {
      const id = idOf(0);
      await sut.redrive(id);
      expect(lines()).toEqual([
        {
          level: 'log',
          context: 'SetAsideActions',
          message: `Re-drove set-aside message ${record.id} of session s (entry ${id}); it was set aside because: refused by the database: no`,
        },
      ]);
    });

    it('warns that a re-driven entry stays listed when its close cannot be written', async () => {
      const id = idOf(0);
      files.failNext('write', fsError('EIO'));
      await sut.redrive(id);
      expect(lines()).toEqual([
        {
          level: 'warn',
          context: 'SetAsideActions',
          message: `Re-drove set-aside message ${record.id} of session s (entry ${id}), but could not close the entry (EIO: i/o error, write): it stays listed`,
        },
      ]);
    });

    it.each([
      ['a message', { ...refused(record) }, `message ${record.id} of session s`],
      [
        'a message of no known session',
        { ...refused(record), sessionId: undefined },
        `message ${record.id} of session unknown`,
      ],
      ['bytes at an offset', { ...torn, offset: 40 }, 'bytes of seg at 40'],
      ['bytes of a whole file', torn, 'bytes of seg'],
    ])(
      'warns what a drop of %s threw away, and why it had been set aside',
      async (_what, entry, what) => {
        await log.append([{ ...entry, at: 99 }]);
        const id = setAsideIdOf(JSON.stringify({ ...entry, at: 99 }));
        logs.lines.length = 0;

        await sut.drop(id);

        expect(lines()).toEqual([
          {
            level: 'warn',
            context: 'SetAsideActions',
            message: `Dropped set-aside entry ${id} (${what}) for good; it was set aside because: ${entry.reason}`,
          },
        ]);
      },
    );
  });

  it('answers not-found for an id no open entry has', async () => {
    expect(await sut.redrive('0000000000000000')).toEqual({
      kind: 'not-found',
      id: '0000000000000000',
    });
  });
});

describe(recordOfEntry.name, () => {
  const record = messageRecord('s', 2);

  it('reads a journal line kept as text or base64, with or without its newline', () => {
    const line = encodeJournalLine(record);
    for (const entry of [
      { raw: line.toString('utf8') },
      { raw: line.subarray(0, -1).toString('utf8') },
      { rawBase64: line.toString('base64') },
    ]) {
      expect(recordOfEntry({ at: 2, reason: 'r', source: 'seg', ...entry })).toEqual({
        kind: 'record',
        record,
      });
    }
  });

  it('checks a kept record field by field', () => {
    expect(recordOfEntry(refused({ ...record, sessionId: 'bad id!' }))).toEqual({
      kind: 'malformed',
      reason: 'bad message: sessionId is not a session id',
    });
  });

  it('finds nothing to re-drive in an entry without bytes', () => {
    expect(recordOfEntry({ at: 1, reason: 'r', source: 'seg' })).toEqual({
      kind: 'malformed',
      reason: 'it holds no bytes of a record',
    });
  });
});
