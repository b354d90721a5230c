import { mkdtemp, open, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MessageRecord } from '../message/message-record.js';
import { encodeScrubbedLine } from './journal-codec.js';
import { JournalIndex } from './journal-index.js';
import { Journal } from './journal.js';
import { type JournalEvents } from './journal-events.js';
import { type JournaledRecord } from './journaled-record.js';
import { drain as drainJournal, type DrainStep } from './testing/drain.js';
import { NodeJournalFiles } from './node-journal-files.js';
import { SegmentNamer, SET_ASIDE_LOG } from './segment-names.js';
import { type SetAsideEntry } from './set-aside-entry.js';
import { SetAsideLog } from './set-aside-log.js';
import {
  journalAdoption,
  journalOver,
  journalWriter,
  quietBlockedFiles,
} from './testing/journal-parts.js';
import { messageRecord } from './testing/records.js';

// Journal.scrub on a real directory: after it, no file of the spool holds a byte of the
// redacted message, and everything else reads, replays and is adopted as before.

const SECRET = 'SECRET-7f3a-the-content-that-must-go';
const META_SECRET = 'META-SECRET-91b2';
const TOOL_SECRET = 'TOOL-SECRET-c4d5';

/** What the journal told the outside: only the set-asides matter here. */
class RecordingEvents implements JournalEvents {
  readonly setAsides: { entries: readonly SetAsideEntry[]; reason: string }[] = [];

  setAside(entries: readonly SetAsideEntry[], reason: 'refused' | 'corrupt'): void {
    this.setAsides.push({ entries, reason });
  }

  replayed(): void {}

  async segmentsRemoved(): Promise<void> {}
}

/** One run of an instance over the directory: its journal and what it is made of. */
interface Run {
  files: NodeJournalFiles;
  index: JournalIndex;
  setAsideLog: SetAsideLog;
  events: RecordingEvents;
  sut: Journal;
  close: () => Promise<void>;
}

describe(`${Journal.name} scrub`, () => {
  let directory: string;
  let run: Run;

  const others = [1, 2, 4, 5].map((sequence) => messageRecord('s', sequence));
  const redacted = messageRecord('s', 3, {
    content: SECRET,
    metadata: { note: META_SECRET },
    toolCalls: [{ name: TOOL_SECRET }],
  });
  // In acceptance order, the redacted one in the middle.
  const records = [others[0], others[1], redacted, others[2], others[3]];

  async function start(instance: string, setAsideLoaded = true): Promise<Run> {
    const files = new NodeJournalFiles(directory);
    const index = new JournalIndex();
    const setAsideLog = new SetAsideLog(files);
    if (setAsideLoaded) await setAsideLog.load();
    const events = new RecordingEvents();
    const writer = journalWriter(files, index, new SegmentNamer(instance), 1024 * 1024);
    const sut = journalOver(files, index, writer, setAsideLog, events);
    return { files, index, setAsideLog, events, sut, close: () => writer.close() };
  }

  /** A later run (another instance id, as every run has) adopts what is in the directory. */
  async function restart(instance = 'bbbbbbbb') {
    const next = await start(instance);
    const corrupt: SetAsideEntry[] = [];
    const adoption = journalAdoption(
      next.files,
      next.index,
      next.setAsideLog,
      instance,
      (entries) => corrupt.push(...entries),
      quietBlockedFiles(),
    );
    const report = await adoption.adopt();
    await adoption.releaseAll();
    return { run: next, report, corrupt };
  }

  async function journal(batch: MessageRecord[]): Promise<JournaledRecord[]> {
    const outcome = await run.sut.append(batch);
    if (outcome.kind !== 'written') throw new Error('not journaled');
    return batch.map((record, position) => ({ record, location: outcome.locations[position] }));
  }

  /** Stores every journal-only record of session `s`; answers what was stored. */
  async function drain(journal: Journal): Promise<MessageRecord[]> {
    const stored: MessageRecord[] = [];
    const outcome = await drainJournal(
      journal,
      's',
      async (batch): Promise<DrainStep> => {
        stored.push(...batch);
        return { kind: 'stored', refused: [] };
      },
      2,
    );
    expect(outcome.kind).toBe('drained');
    return stored;
  }

  /** Every byte of every file under the spool directory, by name. */
  async function filesOnDisk(): Promise<Map<string, Buffer>> {
    const all = new Map<string, Buffer>();
    for (const entry of await readdir(directory, { withFileTypes: true })) {
      if (entry.isFile()) all.set(entry.name, await readFile(join(directory, entry.name)));
    }
    return all;
  }

  async function secretsOnDisk(): Promise<string[]> {
    const found: string[] = [];
    for (const [name, bytes] of await filesOnDisk()) {
      for (const secret of [SECRET, META_SECRET, TOOL_SECRET]) {
        if (bytes.includes(secret)) found.push(`${secret} in ${name}`);
      }
    }
    return found;
  }

  async function setAsideLines(): Promise<Record<string, unknown>[]> {
    const text = (await filesOnDisk()).get(SET_ASIDE_LOG)?.toString('utf8') ?? '';
    return text
      .split('\n')
      .filter((line) => line.trim().length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Writes `bytes` at `offset` of a file of the directory, as a crash half way would leave it. */
  async function writeAt(name: string, bytes: Buffer, offset: number): Promise<void> {
    const handle = await open(join(directory, name), 'r+');
    try {
      await handle.write(bytes, 0, bytes.length, offset);
    } finally {
      await handle.close();
    }
  }

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'scribe-scrub-'));
    run = await start('aaaaaaaa');
  });

  afterEach(async () => {
    await run.close();
    await rm(directory, { recursive: true, force: true });
  });

  /**
   * The usual case: the five are journaled and left memory; the redacted one (and the first)
   * were stored and let go of, the segment stays for the other three.
   */
  async function storedAndScrubbed(): Promise<JournaledRecord[]> {
    const journaled = await journal(records);
    await run.sut.release(journaled);
    await run.sut.resolve([journaled[0], journaled[2]]);
    expect(await secretsOnDisk()).not.toEqual([]);

    await run.sut.scrub([redacted.id]);
    return journaled;
  }

  it('leaves no byte of the content, metadata or tool calls in the segment', async () => {
    const journaled = await storedAndScrubbed();

    expect(await secretsOnDisk()).toEqual([]);
    const segment = (await filesOnDisk()).get(journaled[2].location.segment) as Buffer;
    const { offset, length } = journaled[2].location;
    expect(segment.subarray(offset, offset + length)).toEqual(
      encodeScrubbedLine(redacted.id, length),
    );
    expect(segment.subarray(offset, offset + length).toString('utf8')).toMatch(
      /^\{"crc":"[0-9a-f]{8}","v":1,"scrubbed":"s-3"\} +\n$/,
    );
  });

  it('leaves every other line where it was, read back and drained as before', async () => {
    const journaled = await storedAndScrubbed();

    for (const { record } of journaled.slice(3)) {
      expect(await run.sut.find('s', record.id)).toEqual(record);
    }
    expect(await drain(run.sut)).toEqual([others[1], others[2], others[3]]);
    expect(run.events.setAsides).toEqual([]);
  });

  it('lets go of the message when the journal still owed it (stored, not yet resolved)', async () => {
    const journaled = await journal(records);
    await run.sut.release(journaled);

    await run.sut.scrub([redacted.id]);

    expect(run.index.journalOnlyOf('s', 10).map((entry) => entry.id)).toEqual(
      others.map((record) => record.id),
    );
    expect(await run.sut.find('s', redacted.id)).toBeUndefined();
    expect(await drain(run.sut)).toEqual(others);
    expect(run.events.setAsides).toEqual([]);
    expect(await secretsOnDisk()).toEqual([]);
  });

  it('scrubs a sealed segment the read cache holds, and the cache with it', async () => {
    const journaled = await journal(records);
    await run.sut.release(journaled);
    await run.close();
    // Read whole into the cache (the segment is sealed).
    expect(await run.sut.find('s', redacted.id)).toEqual(redacted);

    await run.sut.scrub([redacted.id]);

    expect(await run.sut.find('s', redacted.id)).toBeUndefined();
    expect(await drain(run.sut)).toEqual(others);
    expect(await secretsOnDisk()).toEqual([]);
  });

  it('is found in no replay and in no set-aside log by the next run', async () => {
    await storedAndScrubbed();
    await run.close();

    const next = await restart();

    // The first one's line is still there (its segment stays for the others): replayed again,
    // the database keeps it once.
    expect(next.report.records).toBe(4);
    expect(next.report.setAside).toBe(0);
    expect(next.corrupt).toEqual([]);
    expect(await drain(next.run.sut)).toEqual(others);
    expect(await setAsideLines()).toEqual([]);
    expect(await secretsOnDisk()).toEqual([]);
  });

  it('changes no byte for a message the spool does not hold', async () => {
    const journaled = await journal(records);
    await run.sut.release(journaled);
    await run.sut.setAside([{ ...journaled[1], reason: 'too long' }]);
    const before = await filesOnDisk();

    await run.sut.scrub(['s-404']);
    await run.sut.scrub([]);

    expect(await filesOnDisk()).toEqual(before);
  });

  it('is idempotent: a second scrub changes nothing', async () => {
    const journaled = await storedAndScrubbed();
    await run.sut.setAside([{ ...journaled[3], reason: 'too long' }]);
    const before = await filesOnDisk();

    await run.sut.scrub([redacted.id]);

    expect(await filesOnDisk()).toEqual(before);
  });

  describe('the set-aside log', () => {
    it('keeps a refused entry (its id, time and reason) without the record', async () => {
      const journaled = await journal(records);
      await run.sut.setAside([
        { ...journaled[2], reason: 'too long' },
        { ...journaled[3], reason: 'bad role' },
      ]);
      const [kept, other] = run.setAsideLog.recentOpen();

      await run.sut.scrub([redacted.id]);

      expect(await secretsOnDisk()).toEqual([]);
      const scrubbed = {
        scrubbed: kept.id,
        at: kept.entry.at,
        reason: 'refused by the database: too long',
        source: journaled[2].location.segment,
        offset: journaled[2].location.offset,
        sessionId: 's',
        messageId: redacted.id,
      };
      expect(await setAsideLines()).toEqual([scrubbed, JSON.parse(JSON.stringify(other.entry))]);
      // This run's view and what a re-drive would read lose it too.
      expect(run.setAsideLog.recentOpen()).toEqual([{ id: kept.id, entry: scrubbed }, other]);
      expect(await run.setAsideLog.find(kept.id)).toEqual({ id: kept.id, entry: scrubbed });
    });

    it('is named by the same id in the next run, and a resolution of it still closes it', async () => {
      const journaled = await journal(records);
      await run.sut.setAside([
        { ...journaled[1], reason: 'bad role' },
        { ...journaled[2], reason: 'too long' },
      ]);
      const [first, kept] = run.setAsideLog.recentOpen();
      await run.sut.scrub([redacted.id]);

      const reloaded = new SetAsideLog(new NodeJournalFiles(directory));
      await reloaded.load();
      expect(reloaded.recentOpen().map((open) => open.id)).toEqual([first.id, kept.id]);
      expect((await reloaded.find(kept.id))?.entry.record).toBeUndefined();
      await reloaded.resolve(kept.id, 'dropped');

      const again = new SetAsideLog(new NodeJournalFiles(directory));
      await again.load();
      expect(again.recentOpen().map((open) => open.id)).toEqual([first.id]);
      expect(await secretsOnDisk()).toEqual([]);
    });

    it('drops the bytes of a corrupt line of the message the drain set aside', async () => {
      const journaled = await journal(records);
      await run.sut.release(journaled);
      const { segment, offset } = journaled[2].location;
      // A flipped byte past the id: the drain sets the line aside with its bytes.
      const line = (await filesOnDisk()).get(segment) as Buffer;
      await writeAt(segment, Buffer.from([line[offset + 80] ^ 0x01]), offset + 80);
      await drain(run.sut);
      expect(await setAsideLines()).toEqual([
        expect.objectContaining({ messageId: redacted.id, raw: expect.any(String) }),
      ]);

      await run.sut.scrub([redacted.id]);

      expect(await secretsOnDisk()).toEqual([]);
      expect(await setAsideLines()).toEqual([
        {
          scrubbed: expect.stringMatching(/^[0-9a-f]{16}$/),
          at: expect.any(Number),
          reason: 'checksum mismatch (torn or corrupted line)',
          source: segment,
          offset,
          sessionId: 's',
          messageId: redacted.id,
        },
      ]);
    });

    it('drops the bytes of a corrupt line an adoption set aside, which names no message', async () => {
      const journaled = await journal(records);
      await run.close();
      const { segment, offset } = journaled[2].location;
      const line = (await filesOnDisk()).get(segment) as Buffer;
      await writeAt(segment, Buffer.from([line[offset + 80] ^ 0x01]), offset + 80);
      const next = await restart();
      expect(next.corrupt).toEqual([expect.objectContaining({ raw: expect.any(String) })]);
      expect(next.corrupt[0].messageId).toBeUndefined();

      await next.run.sut.scrub([redacted.id]);

      expect(await secretsOnDisk()).toEqual([]);
      expect(await setAsideLines()).toEqual([
        {
          scrubbed: expect.stringMatching(/^[0-9a-f]{16}$/),
          at: expect.any(Number),
          reason: 'checksum mismatch (torn or corrupted line)',
          source: segment,
          offset,
          // Named from the bytes it held: a scrub again finds it by it.
          messageId: redacted.id,
        },
      ]);
    });

    it('writes an entry of the message set aside after the scrub without its record', async () => {
      const journaled = await journal(records);
      await run.sut.scrub([redacted.id]);

      // A drain that read the line before the scrub, refused after it.
      await run.sut.setAside([{ ...journaled[2], reason: 'too long' }]);

      expect(await secretsOnDisk()).toEqual([]);
      expect(await setAsideLines()).toEqual([
        expect.objectContaining({
          messageId: redacted.id,
          reason: 'refused by the database: too long',
        }),
      ]);
    });
  });

  describe('torn by a crash', () => {
    it('replays the others when the file ends half way through the scrubbed line', async () => {
      // The redacted message last: the file may end inside its line.
      const journaled = await journal([others[0], others[1], redacted]);
      await run.sut.scrub([redacted.id]);
      await run.close();
      const { segment, offset, length } = journaled[2].location;
      await truncate(join(directory, segment), offset + Math.floor(length / 2));

      const next = await restart();

      expect(next.report.setAside).toBe(0);
      expect(next.corrupt).toEqual([]);
      expect(await drain(next.run.sut)).toEqual([others[0], others[1]]);
      expect(await secretsOnDisk()).toEqual([]);
    });

    it('neither replays nor sets aside a line whose scrub was torn, and a second scrub ends it', async () => {
      const journaled = await journal(records);
      await run.close();
      const { segment, offset, length } = journaled[2].location;
      // Half the scrubbed line written over the old one: the rest is still the message's.
      const scrubbed = encodeScrubbedLine(redacted.id, length) as Buffer;
      await writeAt(segment, scrubbed.subarray(0, 60), offset);
      expect(await secretsOnDisk()).not.toEqual([]);

      const next = await restart();

      expect(next.report.records).toBe(4);
      expect(next.report.setAside).toBe(0);
      expect(next.corrupt).toEqual([]);
      await next.run.sut.scrub([redacted.id]);
      expect(await secretsOnDisk()).toEqual([]);
      expect(await drain(next.run.sut)).toEqual(others);
      expect(next.run.events.setAsides).toEqual([]);
      expect(await setAsideLines()).toEqual([]);
    });

    it('completes a set-aside entry whose scrub was torn', async () => {
      const journaled = await journal(records);
      await run.sut.setAside([{ ...journaled[2], reason: 'too long' }]);
      const [kept] = run.setAsideLog.recentOpen();
      const before = (await filesOnDisk()).get(SET_ASIDE_LOG) as Buffer;
      await run.sut.scrub([redacted.id]);
      const after = (await filesOnDisk()).get(SET_ASIDE_LOG) as Buffer;
      // As a crash half way left it: the new head, the old rest.
      await writeAt(
        SET_ASIDE_LOG,
        Buffer.concat([after.subarray(0, 200), before.subarray(200)]),
        0,
      );
      expect(await secretsOnDisk()).not.toEqual([]);

      const next = await start('bbbbbbbb');
      expect(next.setAsideLog.recentOpen().map((open) => open.id)).toEqual([kept.id]);
      await next.sut.scrub([redacted.id]);

      expect(await secretsOnDisk()).toEqual([]);
      expect((await filesOnDisk()).get(SET_ASIDE_LOG)).toEqual(after);
    });
  });
});
