import { type MessageRecord } from '../message/message-record.js';
import { JournalIndex } from './journal-index.js';
import { Journal } from './journal.js';
import { type JournalEvents } from './journal-events.js';
import { type JournaledRecord } from './journaled-record.js';
import { formatSegmentName, SegmentNamer, SET_ASIDE_LOG } from './segment-names.js';
import { SetAsideLog } from './set-aside-log.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';
import { journalOver, journalWriter } from './testing/journal-parts.js';
import { messageRecord } from './testing/records.js';

// Journal.scrub against the other users of the same files: the writer's appends (its turns),
// a file that cannot be written, and what memory would journal again.

const INSTANCE = 'aaaaaaaa';
const FIRST_SEGMENT = formatSegmentName(5000, 0, INSTANCE);
const SECRET = 'SECRET-0b1e-the-content-that-must-go';

const NO_EVENTS: JournalEvents = {
  setAside: () => undefined,
  replayed: () => undefined,
  segmentsRemoved: async () => undefined,
};

describe(`${Journal.name} scrub, beside the writer`, () => {
  let files: FakeJournalFiles;
  let index: JournalIndex;
  let sut: Journal;

  const redacted = messageRecord('s', 2, { content: SECRET });
  const records = [messageRecord('s', 1), redacted, messageRecord('s', 3)];

  async function journal(batch: MessageRecord[]): Promise<JournaledRecord[]> {
    const outcome = await sut.append(batch);
    if (outcome.kind !== 'written') throw new Error('not journaled');
    return batch.map((record, position) => ({ record, location: outcome.locations[position] }));
  }

  /** The names of the files that hold the secret. */
  function holdingSecret(): string[] {
    return files.names().filter((name) => files.bytes(name).includes(SECRET));
  }

  beforeEach(() => {
    files = new FakeJournalFiles();
    index = new JournalIndex();
    const writer = journalWriter(files, index, new SegmentNamer(INSTANCE, () => 5000), 1 << 20);
    sut = journalOver(files, index, writer, new SetAsideLog(files), NO_EVENTS);
  });

  it('waits for an append in flight to the same segment, and overwrites only after it', async () => {
    await sut.release(await journal(records));
    const calls = files.log.length;
    // The scrub has found the line (outside any turn) when an append begins.
    const scanned = files.holdNext('readRanges');
    const scrubbing = sut.scrub([redacted.id]);
    await files.reached('readRanges', 1);
    const synced = files.holdNext('sync');
    const late = messageRecord('s', 4);
    const appending = sut.append([late]);
    await files.reached('sync', 2);
    scanned.resolve();

    // Every file call of the fake settles within microtasks: past here, only the turn holds it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(files.calls('openForOverwrite')).toBe(0);
    synced.resolve();
    const [appended] = await Promise.all([appending, scrubbing]);

    expect(appended.kind).toBe('written');
    const log = files.log.slice(calls);
    expect(log.indexOf(`openForOverwrite ${FIRST_SEGMENT}`)).toBeGreaterThan(
      log.indexOf(`sync ${FIRST_SEGMENT}`),
    );
    expect(holdingSecret()).toEqual([]);
    expect(await sut.find('s', records[2].id)).toEqual(records[2]);
    expect(index.liveRecords).toBe(3);
  });

  it('rejects when the segment cannot be written, and a second call scrubs it', async () => {
    await sut.release(await journal(records));
    files.failNext('write', fsError('EIO', 'write'), FIRST_SEGMENT);

    await expect(sut.scrub([redacted.id])).rejects.toThrow('EIO');
    expect(holdingSecret()).toEqual([FIRST_SEGMENT]);

    await sut.scrub([redacted.id]);
    expect(holdingSecret()).toEqual([]);
  });

  it('rejects when the sync fails, and a second call writes the line again and syncs it', async () => {
    const [, { location }] = await journal(records);
    files.failNext('sync', fsError('EIO', 'fsync'), FIRST_SEGMENT);

    await expect(sut.scrub([redacted.id])).rejects.toThrow('EIO');
    // On "disk" already: but after a failed fsync the kernel may have dropped the write.
    expect(holdingSecret()).toEqual([]);

    await sut.scrub([redacted.id]);
    const write = `write ${FIRST_SEGMENT}@${location.offset}+${location.length}`;
    expect(files.log.filter((line) => line === write)).toHaveLength(2);
    expect(files.log.lastIndexOf(`sync ${FIRST_SEGMENT}`)).toBeGreaterThan(
      files.log.lastIndexOf(write),
    );
  });

  it('rejects when the set-aside log cannot be written, and a second call scrubs it', async () => {
    const journaled = await journal(records);
    await sut.setAside([{ ...journaled[1], reason: 'too long' }]);
    files.failNext('openForOverwrite', fsError('EACCES', 'open'), SET_ASIDE_LOG);

    await expect(sut.scrub([redacted.id])).rejects.toThrow('EACCES');
    expect(holdingSecret()).toEqual([SET_ASIDE_LOG]);

    await sut.scrub([redacted.id]);
    expect(holdingSecret()).toEqual([]);
  });

  it('does not journal again what memory held of it when its segment vanished', async () => {
    await journal(records);
    files.takeAway(FIRST_SEGMENT);
    expect((await sut.append([messageRecord('s', 4)])).kind).toBe('unavailable');
    expect(index.orphaned().map(({ record }) => record.id)).toEqual(records.map(({ id }) => id));

    await sut.scrub([redacted.id]);
    expect((await sut.append([messageRecord('s', 5)])).kind).toBe('written');

    expect(index.orphaned()).toEqual([]);
    expect(holdingSecret()).toEqual([]);
    const segment = files.names().find((name) => name !== FIRST_SEGMENT) as string;
    expect(files.text(segment)).toContain(records[2].content);
  });
});
