import { Failpoints } from '../common/failpoints.js';
import { type MessageRecord } from '../message/message-record.js';
import { type Journal } from './journal.js';
import { type JournalEvents } from './journal-events.js';
import { JournalIndex } from './journal-index.js';
import {
  addLegacySpool,
  importLegacySpool,
  isLegacySpoolFile,
  parseLegacySpoolFile,
} from './legacy-spool.js';
import { SegmentNamer } from './segment-names.js';
import { journalOver, journalWriter } from './testing/journal-parts.js';
import { SetAsideLog } from './set-aside-log.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { messageRecord } from './testing/records.js';

/** A file as Scribe 0.1 spooled `record`. */
function legacyFile(record: MessageRecord, reason = 'shutdown', overrides: object = {}): string {
  const { sessionId, ...message } = record;
  return JSON.stringify({
    session_key: sessionId,
    reason,
    ts: 1_700_000_000.5,
    seq: 3,
    data: { session_id: sessionId, message },
    ...overrides,
  });
}

const QUIET_EVENTS: JournalEvents = {
  setAside: () => undefined,
  replayed: () => undefined,
  segmentsRemoved: async () => undefined,
};

describe(isLegacySpoolFile.name, () => {
  it.each([
    ['pending-0001.json', true],
    ['pending-a.json', true],
    ['pending-.json', false],
    ['pending-a.json.tmp', false],
    ['old-pending-a.json', false],
    ['pending-a.jsonl', false],
  ])('%s: %s', (name, expected) => {
    expect(isLegacySpoolFile(name)).toBe(expected);
  });
});

describe(parseLegacySpoolFile.name, () => {
  const record = messageRecord('s', 1, { clientMessageId: 'c-1', metadata: { a: 1 } });

  it.each(['shutdown', 'transcript_cap_drop'])(
    'reads the message of a file of reason %s',
    (reason) => {
      expect(parseLegacySpoolFile(legacyFile(record, reason))).toEqual(record);
    },
  );

  it('takes the session from the file, not from the message', () => {
    const text = JSON.stringify({
      session_key: 's',
      reason: 'shutdown',
      data: { session_id: 's', message: { ...record, sessionId: 'other' } },
    });

    expect(parseLegacySpoolFile(text)).toEqual(record);
  });

  it.each([
    ['of a reason Scribe did not own', { reason: 'export' }],
    ['without a reason', { reason: undefined }],
    ['of a reason that is no string', { reason: 7 }],
  ])('leaves a file %s alone', (_case, overrides) => {
    expect(parseLegacySpoolFile(legacyFile(record, 'shutdown', overrides))).toBeNull();
  });

  it.each([
    ['an array', '[]'],
    ['null', 'null'],
    ['a string', '"pending"'],
    ['a number', '42'],
  ])('refuses %s as not a JSON object', (_case, text) => {
    expect(() => parseLegacySpoolFile(text)).toThrow('not a JSON object');
  });

  it('refuses text that is not JSON', () => {
    expect(() => parseLegacySpoolFile('{"session_key":')).toThrow(SyntaxError);
  });

  it('refuses a file whose data names another session', () => {
    const text = legacyFile(record, 'shutdown', {
      data: { session_id: 'other', message: record },
    });

    expect(() => parseLegacySpoolFile(text)).toThrow('data.session_id differs from session_key');
  });

  it('refuses a file without data', () => {
    expect(() => parseLegacySpoolFile(legacyFile(record, 'shutdown', { data: null }))).toThrow(
      'data.session_id differs from session_key',
    );
  });

  it('refuses a message the journal would not take, saying why', () => {
    const text = legacyFile({ ...record, role: 'ROBOT' as MessageRecord['role'] });

    expect(() => parseLegacySpoolFile(text)).toThrow('role is not one of');
  });
});

describe(importLegacySpool.name, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let journal: Journal;

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    const writer = journalWriter(files, index, new SegmentNamer('aaaaaaaa', () => 5000), 1 << 20);
    journal = journalOver(
      files,
      index,
      writer,
      new SetAsideLog(files),
      QUIET_EVENTS,
      new Failpoints(),
    );
  });

  it('journals the messages in acceptance order, journal-only, and deletes their files', async () => {
    const records = [messageRecord('s', 1), messageRecord('s', 2), messageRecord('t', 3)];
    files.put('pending-c.json', legacyFile(records[0], 'transcript_cap_drop'));
    files.put('pending-a.json', legacyFile(records[2]));
    files.put('pending-b.json', legacyFile(records[1]));

    const imported = await importLegacySpool(files, journal);

    expect(imported).toEqual(records);
    expect(index.journalOnlyOf('s', 10).map((entry) => entry.id)).toEqual(['s-1', 's-2']);
    expect(index.journalOnlyOf('t', 10).map((entry) => entry.id)).toEqual(['t-3']);
    expect(index.liveRecords).toBe(3);
    expect(files.names().filter(isLegacySpoolFile)).toEqual([]);
    expect(await journal.find('t', 't-3')).toEqual(records[2]);
  });

  it('leaves malformed files, files of other reasons and other files where they are', async () => {
    const good = messageRecord('s', 1);
    files.put('pending-good.json', legacyFile(good));
    files.put('pending-foreign.json', legacyFile(messageRecord('s', 2), 'export'));
    files.put('pending-broken.json', '{"session_key":');
    files.put('notes.json', legacyFile(messageRecord('s', 3)));

    const imported = await importLegacySpool(files, journal);

    expect(imported).toEqual([good]);
    expect(files.names().filter((name) => name.endsWith('.json'))).toEqual([
      'notes.json',
      'pending-broken.json',
      'pending-foreign.json',
    ]);
  });

  it('leaves a file it cannot read, and imports the others', async () => {
    files.put('pending-a.json', legacyFile(messageRecord('s', 1)));
    files.put('pending-b.json', legacyFile(messageRecord('s', 2)));
    files.failNext('read', fsError('EIO', 'read'), 'pending-a.json');

    const imported = await importLegacySpool(files, journal);

    expect(imported.map((record) => record.id)).toEqual(['s-2']);
    expect(files.has('pending-a.json')).toBe(true);
  });

  it('counts what it imported into an adoption report: records, sessions, newest time', async () => {
    files.put('pending-a.json', legacyFile(messageRecord('s', 1, { acceptedAt: 40 })));
    files.put('pending-b.json', legacyFile(messageRecord('t', 2, { acceptedAt: 30 })));
    const report = {
      owners: ['bbbbbbbb'],
      segments: 1,
      records: 5,
      sessions: ['s', 'u'],
      setAside: 0,
      latestAcceptedAt: 35,
    };

    expect(await addLegacySpool(report, files, journal)).toBe(2);

    expect(report).toEqual({
      owners: ['bbbbbbbb'],
      segments: 1,
      records: 7,
      sessions: ['s', 'u', 't'],
      setAside: 0,
      latestAcceptedAt: 40,
    });
    const later = { ...report, latestAcceptedAt: 50 };
    expect(await addLegacySpool(later, files, journal)).toBe(0);
    expect(later).toMatchObject({ records: 7, latestAcceptedAt: 50 });
  });

  it('journals nothing when there is nothing to import', async () => {
    files.put('pending-foreign.json', legacyFile(messageRecord('s', 2), 'export'));

    expect(await importLegacySpool(files, journal)).toEqual([]);
    expect(files.calls('create')).toBe(0);
  });

  it('keeps every file, and owes nothing, when the journal cannot be written', async () => {
    files.put('pending-a.json', legacyFile(messageRecord('s', 1)));
    files.failNext('create', fsError('ENOSPC', 'open'));

    expect(await importLegacySpool(files, journal)).toEqual([]);
    expect(files.has('pending-a.json')).toBe(true);
    expect(index.hasJournalOnly('s')).toBe(false);
    expect(files.calls('remove')).toBe(0);
  });
});
