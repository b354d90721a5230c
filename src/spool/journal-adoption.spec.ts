import { jest } from '@jest/globals';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { type MessageRecord } from '../message/message-record.js';
import { BlockedFiles } from './blocked-files.js';
import { JournalAdoption } from './journal-adoption.js';
import { JournalIndex } from './journal-index.js';
import { OwnerLock } from './owner-lock.js';
import { formatSegmentName, ownerLockName, SET_ASIDE_LOG } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { type SetAsideEntry } from './set-aside-entry.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { journalAdoption } from './testing/journal-parts.js';
import { ACCEPTED_AT, messageRecord, segmentData } from './testing/records.js';

const OWN = 'aaaaaaaa';
const DEAD = 'dddddddd';
const OTHER_DEAD = 'eeeeeeee';
const LIVE = 'bbbbbbbb';

function segment(owner: string, ms: number, sequence = 0): string {
  return formatSegmentName(ms, sequence, owner);
}

/**
 * The owner locks of the instances sharing the directory: those in `alive` are held by a
 * running process; the others are free for the taking (once).
 */
class FakeOwnerLocks {
  readonly alive = new Set<string>();
  readonly attempts: string[] = [];
  readonly released: string[] = [];
  /** Lock files that cannot be used (a directory, not SQLite): taking them rejects. */
  readonly broken = new Map<string, Error>();
  private readonly held = new Set<string>();

  async tryAcquire(directory: string, name: string): Promise<OwnerLock | null> {
    this.attempts.push(name);
    const broken = this.broken.get(name);
    if (broken) throw broken;
    if (this.alive.has(name) || this.held.has(name)) return null;
    this.held.add(name);
    const lock = {
      path: `${directory}/${name}`,
      release: async () => {
        this.held.delete(name);
        this.released.push(name);
      },
    };
    return lock as unknown as OwnerLock;
  }

  isHeld(name: string): boolean {
    return this.held.has(name);
  }
}

describe(JournalAdoption.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let setAsideLog: SetAsideLog;
  let locks: FakeOwnerLocks;
  let logs: CapturingLogger;
  let reported: (readonly SetAsideEntry[])[];
  let sut: JournalAdoption;
  let blocked: BlockedFiles;
  let blockedEvents: string[];

  /** Writes a segment of these parts; answers where each record's line lies. */
  function put(name: string, parts: (MessageRecord | string | Buffer)[]) {
    const { data, lines } = segmentData(parts);
    files.put(name, data);
    return (record: MessageRecord) => {
      const line = lines.get(record.id);
      if (!line) throw new Error(`${record.id} is not in ${name}`);
      return { segment: name, ...line };
    };
  }

  function journalOnlyIds(sessionId: string): string[] {
    return index.journalOnlyOf(sessionId, 100).map((entry) => entry.id);
  }

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    setAsideLog = new SetAsideLog(files);
    locks = new FakeOwnerLocks();
    jest
      .spyOn(OwnerLock, 'tryAcquire')
      .mockImplementation((directory, name) => locks.tryAcquire(directory, name));
    logs = new CapturingLogger();
    Logger.overrideLogger(logs);
    reported = [];
    blocked = new BlockedFiles(
      {
        blocked: (file) => blockedEvents.push(`blocked ${file.source}: ${file.reason}`),
        recovered: (file) => blockedEvents.push(`recovered ${file.source}`),
      },
      0,
      0,
    );
    blockedEvents = [];
    sut = journalAdoption(
      files,
      index,
      setAsideLog,
      OWN,
      (entries) => {
        reported.push(entries);
      },
      blocked,
    );
  });

  afterEach(() => {
    jest.restoreAllMocks();
    Logger.overrideLogger(new ConsoleLogger());
  });

  it('takes over the segments of a dead instance: each record owed once, journal-only, in order', async () => {
    const [s1, s2, s3, t5] = [
      messageRecord('s', 1),
      messageRecord('s', 2),
      messageRecord('s', 3),
      messageRecord('t', 5),
    ];
    const first = segment(DEAD, 1000);
    const second = segment(DEAD, 2000);
    const inFirst = put(first, [s3, t5, s1]);
    const inSecond = put(second, [s2]);
    files.put(ownerLockName(DEAD), '');

    const report = await sut.adopt();

    expect(report).toEqual({
      owners: [DEAD],
      segments: 2,
      records: 4,
      sessions: ['s', 't'],
      setAside: 0,
      latestAcceptedAt: ACCEPTED_AT + 5,
    });
    expect(index.journalOnlyOf('s', 10)).toEqual([
      {
        id: s1.id,
        sessionId: 's',
        orderKey: s1.orderKey,
        acceptedAt: s1.acceptedAt,
        location: inFirst(s1),
        record: s1,
      },
      {
        id: s2.id,
        sessionId: 's',
        orderKey: s2.orderKey,
        acceptedAt: s2.acceptedAt,
        location: inSecond(s2),
        record: s2,
      },
      {
        id: s3.id,
        sessionId: 's',
        orderKey: s3.orderKey,
        acceptedAt: s3.acceptedAt,
        location: inFirst(s3),
        record: s3,
      },
    ]);
    expect(journalOnlyIds('t')).toEqual([t5.id]);
    expect([index.liveIn(first), index.liveIn(second)]).toEqual([3, 1]);
    expect([index.isSealed(first), index.isSealed(second)]).toEqual([true, true]);
    expect(index.bytes).toBe(files.bytes(first).length + files.bytes(second).length);
    expect(index.oldestAcceptedAt).toBe(s1.acceptedAt);
    expect(locks.isHeld(ownerLockName(DEAD))).toBe(true);
    expect(files.names()).toEqual([first, second, ownerLockName(DEAD)]);
  });

  it('keeps the records it read in memory up to its budget, so the write-back need not read them again', async () => {
    const records = [1, 2, 3].map((sequence) => messageRecord('s', sequence));
    const inFirst = put(segment(DEAD, 1000), records);
    const budget = inFirst(records[0]).length + inFirst(records[1]).length;
    sut = journalAdoption(files, index, setAsideLog, OWN, () => undefined, blocked, budget);

    await sut.adopt();

    expect(index.journalOnlyOf('s', 10).map((entry) => entry.record)).toEqual([
      records[0],
      records[1],
      undefined,
    ]);
  });

  it('puts records of several dead instances in acceptance order, whichever wrote them', async () => {
    const records = [1, 2, 3, 4].map((sequence) => messageRecord('s', sequence));
    put(segment(DEAD, 1000), [records[0], records[3]]);
    put(segment(OTHER_DEAD, 900), [records[2], records[1]]);

    const report = await sut.adopt();

    expect(report.owners).toEqual([OTHER_DEAD, DEAD]);
    expect(journalOnlyIds('s')).toEqual(records.map((record) => record.id));
  });

  it('lists the sessions in the order of their oldest record', async () => {
    put(segment(DEAD, 1000), [messageRecord('t', 5), messageRecord('s', 1), messageRecord('u', 3)]);

    const report = await sut.adopt();

    expect(report.sessions).toEqual(['s', 'u', 't']);
  });

  it('puts adopted records before journal-only records of its own that are newer', async () => {
    const own = messageRecord('s', 9);
    index.addJournalOnly([
      {
        id: own.id,
        sessionId: 's',
        orderKey: own.orderKey,
        acceptedAt: own.acceptedAt,
        location: { segment: segment(OWN, 5000), offset: 0, length: 10 },
      },
    ]);
    put(segment(DEAD, 1000), [messageRecord('s', 2), messageRecord('s', 1)]);

    await sut.adopt();

    expect(journalOnlyIds('s')).toEqual(['s-1', 's-2', 's-9']);
  });

  it('leaves its own segments, files not of the journal, and live instances alone', async () => {
    const own = segment(OWN, 1000);
    const live = segment(LIVE, 1000);
    put(own, [messageRecord('s', 1)]);
    put(live, [messageRecord('s', 2)]);
    files.put('notes.txt', 'journal of my holidays\n');
    files.put(SET_ASIDE_LOG, '');
    files.put(ownerLockName(LIVE), '');
    locks.alive.add(ownerLockName(LIVE));

    const report = await sut.adopt();

    expect(report).toEqual({
      owners: [],
      segments: 0,
      records: 0,
      sessions: [],
      setAside: 0,
      latestAcceptedAt: 0,
    });
    expect(locks.attempts).toEqual([ownerLockName(LIVE)]);
    expect(files.calls('read')).toBe(0);
    expect(index.liveRecords).toBe(0);
    expect(files.names()).toEqual(
      [own, live, 'notes.txt', SET_ASIDE_LOG, ownerLockName(LIVE)].sort(),
    );
  });

  it('takes over a live instance once it has died', async () => {
    const live = segment(LIVE, 1000);
    put(live, [messageRecord('s', 1)]);
    locks.alive.add(ownerLockName(LIVE));
    await sut.adopt();

    locks.alive.delete(ownerLockName(LIVE));
    const report = await sut.adopt();

    expect(report.owners).toEqual([LIVE]);
    expect(journalOnlyIds('s')).toEqual(['s-1']);
  });

  describe('duplicates', () => {
    it('owes a record journaled twice once, and deletes a segment of nothing but copies', async () => {
      const [r1, r2, r3] = [1, 2, 3].map((sequence) => messageRecord('s', sequence));
      const first = segment(DEAD, 1000);
      const second = segment(DEAD, 2000);
      const copies = segment(OTHER_DEAD, 3000);
      const inFirst = put(first, [r1, r2]);
      const inSecond = put(second, [r2, r3]);
      put(copies, [r1, r3]);

      const report = await sut.adopt();

      expect(report.records).toBe(3);
      expect(index.journalOnlyOf('s', 10).map((entry) => entry.location)).toEqual([
        inFirst(r1),
        inFirst(r2),
        inSecond(r3),
      ]);
      expect([index.liveIn(first), index.liveIn(second)]).toEqual([2, 1]);
      expect(index.liveRecords).toBe(3);
      expect(files.has(copies)).toBe(false);
      expect(index.isSealed(copies)).toBe(false);
    });

    // Two imports of the same messages into two sessions: two records, not two copies. The
    // write-back stores one, and sets the other aside (StoredElsewhere).
    it("owes a record of another session with the same id as another's, from any owner", async () => {
      const mine = messageRecord('s', 1);
      const theirs = { ...messageRecord('t', 1), id: mine.id };
      const alsoTheirs = { ...messageRecord('u', 1), id: mine.id };
      put(segment(DEAD, 1000), [mine, theirs]);
      put(segment(OTHER_DEAD, 2000), [alsoTheirs, mine]);

      const report = await sut.adopt();

      expect(report.records).toBe(3);
      expect(report.sessions.sort()).toEqual(['s', 't', 'u']);
      for (const session of ['s', 't', 'u']) {
        expect(index.findJournalOnly(session, mine.id)?.sessionId).toBe(session);
      }
      expect(index.liveIn(segment(OTHER_DEAD, 2000))).toBe(1);
    });

    it('skips a record the index already holds on disk', async () => {
      const r1 = messageRecord('s', 1);
      const mine = { segment: segment(OWN, 500), offset: 0, length: 1 };
      index.addJournalOnly([
        {
          id: r1.id,
          sessionId: 's',
          orderKey: r1.orderKey,
          acceptedAt: r1.acceptedAt,
          location: mine,
        },
      ]);
      put(segment(DEAD, 1000), [r1, messageRecord('s', 2)]);

      const report = await sut.adopt();

      expect(report.records).toBe(1);
      expect(index.findJournalOnly('s', r1.id)?.location).toEqual(mine);
      expect(index.liveIn(segment(DEAD, 1000))).toBe(1);
    });

    it('takes over the segments it can read of an instance with one it cannot', async () => {
      // The unreadable segment's records are not known yet, so they make nothing a duplicate;
      // the copy in a segment read is owed once, from its first owner.
      const r1 = messageRecord('s', 1);
      const first = segment(DEAD, 1000);
      const inFirst = put(first, [r1]);
      const unreadable = segment(DEAD, 2000);
      put(unreadable, [messageRecord('s', 2)]);
      const copy = segment(OTHER_DEAD, 3000);
      put(copy, [r1, messageRecord('s', 3)]);
      files.failNext('read', fsError('EIO', 'read'), unreadable);

      const report = await sut.adopt();

      expect(report.owners).toEqual([DEAD, OTHER_DEAD]);
      expect(index.findJournalOnly('s', r1.id)?.location).toEqual(inFirst(r1));
      expect(journalOnlyIds('s')).toEqual(['s-1', 's-3']);
      expect(blocked.list()).toEqual([
        {
          source: unreadable,
          reason: 'segment unreadable: EIO: i/o error, read',
          records: null,
          since: expect.any(Number),
        },
      ]);
      expect(files.has(unreadable)).toBe(true);
      expect(locks.isHeld(ownerLockName(DEAD))).toBe(true);
    });
  });

  describe('bad lines', () => {
    it('sets them aside, with where they were and their bytes, before anything else', async () => {
      const [r1, r2] = [messageRecord('s', 1), messageRecord('s', 2)];
      const flipped = Buffer.from(segmentData([r2]).data);
      flipped[30] ^= 0x01;
      const mixed = segment(DEAD, 1000);
      const empty = segment(DEAD, 2000);
      const inMixed = put(mixed, [r1, flipped, Buffer.from([0xff, 0x0a]), '{"crc":"torn']);
      files.put(empty, '');
      const start = inMixed(r1).length;

      const report = await sut.adopt();

      const expected = [
        {
          at: expect.any(Number),
          reason: 'checksum mismatch (torn or corrupted line)',
          source: mixed,
          offset: start,
          raw: flipped.toString('utf8'),
        },
        {
          at: expect.any(Number),
          reason: 'not a journal record (no checksum prefix)',
          source: mixed,
          offset: start + flipped.length,
          rawBase64: Buffer.from([0xff, 0x0a]).toString('base64'),
        },
        {
          at: expect.any(Number),
          reason: 'torn tail (no newline)',
          source: mixed,
          offset: start + flipped.length + 2,
          raw: '{"crc":"torn',
        },
      ];
      expect(report.setAside).toBe(3);
      expect(reported).toEqual([expected]);
      expect(setAsideLog.count).toBe(3);
      expect(
        files
          .text(SET_ASIDE_LOG)
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line)),
      ).toEqual(expected);
      const synced = files.log.indexOf(`sync ${SET_ASIDE_LOG}`);
      expect(synced).toBeGreaterThan(files.log.indexOf(`read ${empty}`));
      expect(synced).toBeLessThan(files.log.indexOf(`remove ${empty}`));
      expect(journalOnlyIds('s')).toEqual([r1.id]);
      expect(index.bytes).toBe(files.bytes(mixed).length);
    });

    it('reports nothing set aside when every line is good', async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);

      await sut.adopt();

      expect(reported).toEqual([]);
      expect(files.has(SET_ASIDE_LOG)).toBe(false);
    });

    it('takes the good records over, keeping the bad segment, when the set-aside log cannot be written', async () => {
      const good = segment(DEAD, 1000);
      const bad = segment(DEAD, 2000);
      put(good, [messageRecord('s', 1)]);
      put(bad, ['garbage\n']);
      files.failNext('openForAppend', fsError('EACCES', 'open'));

      const report = await sut.adopt();

      expect(report.owners).toEqual([DEAD]);
      expect(report.records).toBe(1);
      expect(report.setAside).toBe(0);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      // Pinned: the bad line is neither stored nor kept, so its segment stays.
      expect(index.liveIn(bad)).toBe(1);
      expect(files.names()).toEqual([good, bad]);
      expect(reported).toEqual([]);
      expect(locks.released).toEqual([]);
      expect(blocked.list()).toEqual([
        {
          source: SET_ASIDE_LOG,
          reason: 'cannot be written: EACCES: permission denied, open',
          records: 1,
          since: expect.any(Number),
        },
      ]);
      expect(sut.retryDue).toBe(true);

      const retried = await sut.adopt();

      expect(retried.owners).toEqual([]);
      expect(retried.setAside).toBe(1);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(files.names()).toEqual([good, SET_ASIDE_LOG]);
      expect(reported).toEqual([
        [
          {
            at: expect.any(Number),
            reason: 'not a journal record (no checksum prefix)',
            source: bad,
            offset: 0,
            raw: 'garbage\n',
          },
        ],
      ]);
      expect(blocked.size).toBe(0);
      expect(blockedEvents).toEqual([
        `blocked ${SET_ASIDE_LOG}: cannot be written: EACCES: permission denied, open`,
        `recovered ${SET_ASIDE_LOG}`,
      ]);
      expect(sut.retryDue).toBe(false);
    });

    it('keeps the lines of several rounds until the log takes them, then all at once', async () => {
      const first = segment(DEAD, 1000);
      const second = segment(OTHER_DEAD, 2000);
      put(first, ['one\n']);
      files.failNext('openForAppend', fsError('ENOSPC', 'write'));
      await sut.adopt();
      put(second, ['two\n']);

      await sut.adopt();

      expect(files.names()).toEqual([SET_ASIDE_LOG]);
      expect(reported.flat().map((entry) => entry.raw)).toEqual(['one\n', 'two\n']);
      expect(locks.released).toEqual([ownerLockName(DEAD), ownerLockName(OTHER_DEAD)]);
    });
  });

  describe('segments that owe nothing', () => {
    it('deletes zero-length and all-bad segments, and the owner lock once none is left', async () => {
      const empty = segment(DEAD, 1000);
      const bad = segment(DEAD, 2000);
      files.put(empty, '');
      put(bad, ['garbage\n', '\n']);
      files.put(ownerLockName(DEAD), '');
      files.put(`${ownerLockName(DEAD)}-journal`, '');

      const report = await sut.adopt();

      expect(report).toMatchObject({ owners: [DEAD], segments: 2, records: 0, setAside: 1 });
      expect(files.names()).toEqual([SET_ASIDE_LOG]);
      expect(index.bytes).toBe(0);
      expect(locks.released).toEqual([ownerLockName(DEAD)]);
      const removed = files.log.filter((line) => line.startsWith('remove'));
      expect(removed).toEqual([
        `remove ${empty}`,
        `remove ${bad}`,
        `remove ${ownerLockName(DEAD)}`,
        `remove ${ownerLockName(DEAD)}-journal`,
      ]);
    });

    it('lets go of the lock even when the lock file cannot be deleted', async () => {
      files.put(segment(DEAD, 1000), '');
      files.failNext('remove', fsError('EACCES', 'unlink'), ownerLockName(DEAD));
      files.failNext('remove', fsError('EACCES', 'unlink'), `${ownerLockName(DEAD)}-journal`);

      await sut.adopt();

      expect(locks.released).toEqual([ownerLockName(DEAD)]);
    });

    it('keeps the records of the other segments when one that owes nothing cannot be deleted', async () => {
      const good = segment(DEAD, 1000);
      const empty = segment(DEAD, 2000);
      put(good, [messageRecord('s', 1)]);
      files.put(empty, '');
      files.failNext('remove', fsError('EROFS', 'unlink'), empty);

      const report = await sut.adopt();

      expect(report).toMatchObject({ owners: [DEAD], records: 1 });
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(index.liveRecords).toBe(1);
      expect(files.has(empty)).toBe(true);

      await sut.adopt();

      expect(files.names()).toEqual([good]);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(index.liveRecords).toBe(1);
    });
  });

  describe('later rounds', () => {
    it('reads no segment twice, and keeps the lock it holds', async () => {
      const first = segment(DEAD, 1000);
      put(first, [messageRecord('s', 1)]);
      await sut.adopt();

      const report = await sut.adopt();

      expect(report).toEqual({
        owners: [],
        segments: 0,
        records: 0,
        sessions: [],
        setAside: 0,
        latestAcceptedAt: 0,
      });
      expect(files.calls('read')).toBe(1);
      expect(locks.attempts).toEqual([ownerLockName(DEAD)]);
      expect(index.liveRecords).toBe(1);
    });

    it('takes over a segment found later with the lock it already holds', async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);
      await sut.adopt();
      put(segment(DEAD, 2000), [messageRecord('s', 2)]);

      const report = await sut.adopt();

      expect(report).toMatchObject({ owners: [DEAD], segments: 1, records: 1 });
      expect(locks.attempts).toEqual([ownerLockName(DEAD)]);
      expect(journalOnlyIds('s')).toEqual(['s-1', 's-2']);
    });

    it('keeps the lock of an instance whose only segment cannot be read, and tries again', async () => {
      const first = segment(DEAD, 1000);
      put(first, [messageRecord('s', 1)]);
      files.failNext('read', fsError('EIO', 'read'), first);

      const failed = await sut.adopt();

      expect(failed.owners).toEqual([DEAD]);
      expect(locks.released).toEqual([]);
      expect(locks.isHeld(ownerLockName(DEAD))).toBe(true);
      expect(index.liveRecords).toBe(0);
      expect(logs.messages('error')).toEqual([]);
      expect(blockedEvents).toEqual([`blocked ${first}: segment unreadable: EIO: i/o error, read`]);
      expect(sut.retryDue).toBe(true);

      const retried = await sut.adopt();

      expect(retried.owners).toEqual([DEAD]);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(blockedEvents).toEqual([
        `blocked ${first}: segment unreadable: EIO: i/o error, read`,
        `recovered ${first}`,
      ]);
      expect(sut.retryDue).toBe(false);
    });

    it('keeps the lock of an instance it took over when a later segment cannot be read', async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);
      await sut.adopt();
      put(segment(DEAD, 2000), [messageRecord('s', 2)]);
      files.failNext('read', fsError('EIO', 'read'), segment(DEAD, 2000));

      await sut.adopt();

      expect(locks.released).toEqual([]);
      expect(locks.isHeld(ownerLockName(DEAD))).toBe(true);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
    });
  });

  describe('files that cannot be used, each held to its owner or segment', () => {
    const notADatabase = Object.assign(new Error('SQLITE_NOTADB: file is not a database'), {
      code: 'SQLITE_NOTADB',
    });

    it("replays the other owners' records past a dead owner's unusable lock file, and lists it", async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);
      put(segment(DEAD, 1500), [messageRecord('t', 1)]);
      put(segment(OTHER_DEAD, 2000), [messageRecord('s', 2)]);
      locks.broken.set(ownerLockName(DEAD), notADatabase);

      const report = await sut.adopt();

      expect(report.owners).toEqual([OTHER_DEAD]);
      expect(journalOnlyIds('s')).toEqual(['s-2']);
      expect(index.hasJournalOnly('t')).toBe(false);
      const reason = `lock file unusable: SQLITE_NOTADB: file is not a database; the 2 segment(s) of instance ${DEAD} wait`;
      expect(blocked.list()).toEqual([
        { source: ownerLockName(DEAD), reason, records: null, since: expect.any(Number) },
      ]);
      expect(blockedEvents).toEqual([`blocked ${ownerLockName(DEAD)}: ${reason}`]);
      expect(logs.messages('error')).toEqual([]);
      expect(sut.retryDue).toBe(true);
    });

    it('takes the owner over on a later round once its lock file is fixed', async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);
      locks.broken.set(ownerLockName(DEAD), notADatabase);
      await sut.adopt();
      locks.broken.clear();

      const report = await sut.adopt();

      expect(report.owners).toEqual([DEAD]);
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(blocked.size).toBe(0);
      expect(blockedEvents).toEqual([
        `blocked ${ownerLockName(DEAD)}: lock file unusable: SQLITE_NOTADB: file is not a database; the 1 segment(s) of instance ${DEAD} wait`,
        `recovered ${ownerLockName(DEAD)}`,
      ]);
      expect(sut.retryDue).toBe(false);
    });

    it('does not try a blocked lock file or segment again before its backoff is over', async () => {
      let now = 0;
      blocked = new BlockedFiles(
        { blocked: () => undefined, recovered: () => undefined },
        1000,
        8000,
        () => now,
      );
      sut = journalAdoption(files, index, setAsideLog, OWN, () => undefined, blocked);
      const unreadable = segment(DEAD, 1000);
      put(unreadable, [messageRecord('s', 1)]);
      put(segment(OTHER_DEAD, 2000), [messageRecord('t', 1)]);
      files.failNext('read', fsError('EIO', 'read'), unreadable);
      locks.broken.set(ownerLockName(OTHER_DEAD), notADatabase);
      await sut.adopt();
      const attempts = locks.attempts.length;
      const reads = files.calls('read');
      now = 999;

      expect(sut.retryDue).toBe(false);
      await sut.adopt();
      expect(locks.attempts.length).toBe(attempts);
      expect(files.calls('read')).toBe(reads);

      now = 1000;
      expect(sut.retryDue).toBe(true);
      await sut.adopt();
      expect(journalOnlyIds('s')).toEqual(['s-1']);
      expect(locks.attempts.slice(attempts)).toEqual([ownerLockName(OTHER_DEAD)]);
    });

    it('stops listing what is gone from the directory, and lets go of a lock kept for it', async () => {
      const unreadable = segment(DEAD, 1000);
      put(unreadable, [messageRecord('s', 1)]);
      put(segment(OTHER_DEAD, 2000), [messageRecord('t', 1)]);
      files.failNext('read', fsError('EIO', 'read'), unreadable);
      locks.broken.set(ownerLockName(OTHER_DEAD), notADatabase);
      await sut.adopt();
      expect(blocked.list().map((file) => file.source)).toEqual([
        unreadable,
        ownerLockName(OTHER_DEAD),
      ]);
      await files.remove(unreadable);
      await files.remove(segment(OTHER_DEAD, 2000));

      await sut.adopt();

      expect(blocked.list()).toEqual([]);
      expect(sut.retryDue).toBe(false);
      expect(locks.isHeld(ownerLockName(DEAD))).toBe(false);
      expect(blockedEvents.filter((event) => event.startsWith('recovered'))).toEqual([
        `recovered ${unreadable}`,
        `recovered ${ownerLockName(OTHER_DEAD)}`,
      ]);
    });

    it('lists a segment over 2 GiB as blocked, with why, and replays the others', async () => {
      const huge = segment(DEAD, 1000);
      put(huge, [messageRecord('s', 1)]);
      put(segment(DEAD, 2000), [messageRecord('t', 1)]);
      const tooLarge = Object.assign(
        new RangeError('File size (3221225472) is greater than 2 GiB'),
        { code: 'ERR_FS_FILE_TOO_LARGE' },
      );
      files.failNext('read', tooLarge, huge);

      await sut.adopt();

      expect(journalOnlyIds('t')).toEqual(['t-1']);
      expect(blocked.list()).toEqual([
        {
          source: huge,
          reason:
            'segment too large to read (over 2 GiB): ERR_FS_FILE_TOO_LARGE: File size (3221225472) is greater than 2 GiB',
          records: null,
          since: expect.any(Number),
        },
      ]);
    });
  });

  describe('segmentRemoved', () => {
    it('deletes the lock file and lets go of the lock once the last segment is gone', async () => {
      const first = segment(DEAD, 1000);
      const second = segment(DEAD, 2000);
      put(first, [messageRecord('s', 1)]);
      put(second, [messageRecord('s', 2)]);
      files.put(ownerLockName(DEAD), '');
      await sut.adopt();

      await files.remove(first);
      await sut.segmentRemoved(first);
      expect(locks.released).toEqual([]);
      expect(files.has(ownerLockName(DEAD))).toBe(true);

      await files.remove(second);
      await sut.segmentRemoved(second);
      expect(locks.released).toEqual([ownerLockName(DEAD)]);
      expect(files.names()).toEqual([]);
    });

    it('ignores segments of owners it has not taken over, and other names', async () => {
      put(segment(DEAD, 1000), [messageRecord('s', 1)]);
      await sut.adopt();
      const before = files.log.length;

      await sut.segmentRemoved(segment(OWN, 1000));
      await sut.segmentRemoved(segment(OTHER_DEAD, 1000));
      await sut.segmentRemoved('notes.txt');

      expect(files.log.length).toBe(before);
      expect(locks.released).toEqual([]);
    });
  });

  it('lets go of every lock it holds at shutdown, once', async () => {
    put(segment(DEAD, 1000), [messageRecord('s', 1)]);
    put(segment(OTHER_DEAD, 1000), [messageRecord('t', 1)]);
    await sut.adopt();

    await sut.releaseAll();
    await sut.releaseAll();

    expect(locks.released.sort()).toEqual([ownerLockName(DEAD), ownerLockName(OTHER_DEAD)]);
    await sut.segmentRemoved(segment(DEAD, 1000));
    expect(locks.released).toHaveLength(2);
  });
  describe('with a check that refuses records (from the future)', () => {
    it('sets a refused record aside whole, with its reason, and owes the others', async () => {
      const kept = messageRecord('s1', 1);
      const future = messageRecord('s1', 2, { acceptedAt: ACCEPTED_AT + 5_000 });
      const refusals: (string | undefined)[] = [];
      sut = journalAdoption(
        files,
        index,
        setAsideLog,
        OWN,
        (entries, reason) => {
          reported.push(entries);
          refusals.push(reason);
        },
        blocked,
        undefined,
        (record) => (record.id === future.id ? 'from the future' : undefined),
      );
      const name = segment(DEAD, 1000);
      const at = put(name, [kept, future]);

      const report = await sut.adopt();

      expect(journalOnlyIds('s1')).toEqual([kept.id]);
      expect(report).toMatchObject({ records: 1, setAside: 1, latestAcceptedAt: kept.acceptedAt });
      const entry = {
        at: expect.any(Number),
        reason: 'from the future',
        source: name,
        offset: at(future).offset,
        sessionId: 's1',
        messageId: future.id,
        record: future,
      };
      expect(reported).toEqual([[entry]]);
      expect(refusals).toEqual(['refused']);
      expect(setAsideLog.recent()).toEqual([entry]);
      expect(files.text(SET_ASIDE_LOG)).toContain(future.id);
    });

    it('removes a segment with nothing but refused records, once they are set aside', async () => {
      sut = journalAdoption(
        files,
        index,
        setAsideLog,
        OWN,
        (entries) => reported.push(entries),
        blocked,
        undefined,
        () => 'from the future',
      );
      const future = messageRecord('s1', 1);
      put(segment(DEAD, 1000), [future]);

      const report = await sut.adopt();

      expect(report).toMatchObject({ records: 0, setAside: 1, latestAcceptedAt: 0 });
      expect(files.names()).toEqual([SET_ASIDE_LOG]);
    });
  });
});
