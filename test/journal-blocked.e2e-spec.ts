import {
  chmod,
  chown,
  mkdir,
  readFile,
  readdir,
  rmdir,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { type MessageRecord } from '../src/message/message-record.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { encodeJournalLine } from '../src/spool/journal-codec.js';
import { formatSegmentName, ownerLockName } from '../src/spool/segment-names.js';
import { eventually, metricValue, readTranscript } from './support/fault-helpers.js';
import { NOBODY, journalSuite, spoolStatusOf } from './support/journal-suite.js';
import { type ServerProcess } from './support/server-process.js';

// Journals of instances that are gone, with one file each that cannot be used: a lock file
// that is a directory or not SQLite, a segment whose mode is 000 or that is over 2 GiB, a
// set-aside log that is a directory. Each holds back only what it concerns: the rest replays
// at start, spoolStatus names what waits and why, and a fix is picked up without a restart.
const { faultTest, nobodysSpool, startAsNobody } = journalSuite(60_000, {
  DB_RETRY_INTERVAL_MS: '200',
});
const BLOCKED = 'messages blocked { source reason records since }';

/** Writes a file of the spool as an earlier run of the server (nobody) would have left it. */
async function put(spoolDir: string, name: string, data: Buffer | string): Promise<string> {
  const path = join(spoolDir, name);
  await writeFile(path, data, { mode: 0o600 });
  await chown(path, NOBODY.uid, NOBODY.gid);
  return path;
}

function records(sessionId: string, count: number, from = 0): MessageRecord[] {
  // Accepted a minute ago, in order: anything accepted now sorts after them.
  const base = Date.now() - 60_000;
  return Array.from({ length: count }, (_, index) =>
    acceptedRecord(sessionId, `${sessionId}-${from + index}`, { acceptedAt: base + index }),
  );
}

const lines = (list: MessageRecord[]) => Buffer.concat(list.map(encodeJournalLine));
const contents = (list: MessageRecord[]) => list.map((record) => record.content);

async function blockedOf(target: ServerProcess): Promise<{ source: string; reason: string }[]> {
  return (await spoolStatusOf(target, BLOCKED)).blocked;
}

describe("a dead instance's lock file that cannot be used", () => {
  faultTest(
    "holds back that instance's journal only, is listed, and is taken over once fixed, without a restart",
    async () => {
      const { dataDir, spoolDir } = await nobodysSpool();
      const [dir, garbage, fine] = ['dddddddd', 'eeeeeeee', 'ffffffff'];
      const held = { dir: records('dir', 3), garbage: records('garbage', 3) };
      const replayed = records('fine', 3);
      const now = Date.now();
      await put(spoolDir, formatSegmentName(now - 60_000, 0, dir), lines(held.dir));
      await put(spoolDir, formatSegmentName(now - 59_000, 0, fine), lines(replayed));
      await put(spoolDir, formatSegmentName(now - 58_000, 0, garbage), lines(held.garbage));
      await mkdir(join(spoolDir, ownerLockName(dir)));
      await put(spoolDir, ownerLockName(garbage), 'x'.repeat(4096));

      const target = await startAsNobody(dataDir);

      expect(target.output()).toContain(
        'Boot replay stored 3 journaled message(s) of 1 session(s)',
      );
      expect((await readTranscript(target, 'fine')).contents).toEqual(contents(replayed));
      expect(await blockedOf(target)).toEqual([
        {
          source: ownerLockName(dir),
          reason: expect.stringMatching(/^lock file unusable: ENOTREGULAR.*1 segment\(s\)/),
          records: null,
          since: expect.any(Number),
        },
        {
          source: ownerLockName(garbage),
          reason: expect.stringMatching(/^lock file unusable: SQLITE_NOTADB/),
          records: null,
          since: expect.any(Number),
        },
      ]);
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(2);
      expect((await target.get('/health')).body.details.spool).toEqual({
        status: 'up',
        blocked: 2,
      });

      await rmdir(join(spoolDir, ownerLockName(dir)));
      await put(spoolDir, ownerLockName(garbage), '');

      await eventually(async () => {
        expect((await readTranscript(target, 'dir')).contents).toEqual(contents(held.dir));
        expect((await readTranscript(target, 'garbage')).contents).toEqual(contents(held.garbage));
      }, 30_000);
      await eventually(async () => expect(await blockedOf(target)).toEqual([]));
      await eventually(async () => {
        const left = await readdir(spoolDir);
        expect(left).not.toContain(ownerLockName(dir));
        expect(left).not.toContain(ownerLockName(garbage));
      });
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(0);
    },
  );
});

describe('one file of a dead instance that cannot be used', () => {
  faultTest(
    "holds back only what it holds: the instance's other good records replay, and the file is listed until fixed",
    async () => {
      const { dataDir, spoolDir } = await nobodysSpool();
      const owner = 'dddddddd';
      const now = Date.now();
      const first = records('d', 3);
      const unreadable = records('d', 2, 3);
      const torn = records('e', 3);
      const tornLine = encodeJournalLine(torn[2]).subarray(0, 40);
      const names = [0, 1, 2, 3].map((at) => formatSegmentName(now - 60_000 + at, 0, owner));
      await put(spoolDir, names[0], lines(first));
      const locked = await put(spoolDir, names[1], lines(unreadable));
      await chmod(locked, 0o000);
      await put(spoolDir, names[2], Buffer.concat([lines(torn.slice(0, 2)), tornLine]));
      // Over 2 GiB, sparse: it cannot be read whole.
      await truncate(await put(spoolDir, names[3], ''), 3 * 1024 ** 3);
      await mkdir(join(spoolDir, 'set-aside.jsonl'));

      const target = await startAsNobody(dataDir);

      expect((await readTranscript(target, 'd')).contents).toEqual(contents(first));
      expect((await readTranscript(target, 'e')).contents).toEqual(contents(torn.slice(0, 2)));
      const blocked = await blockedOf(target);
      expect(blocked).toEqual(
        expect.arrayContaining([
          {
            source: names[1],
            reason: expect.stringMatching(/^segment unreadable: EACCES/),
            records: null,
            since: expect.any(Number),
          },
          {
            source: names[3],
            reason: expect.stringMatching(/^segment too large to read \(over 2 GiB\)/),
            records: null,
            since: expect.any(Number),
          },
          {
            source: 'set-aside.jsonl',
            reason: expect.stringMatching(/^cannot be written: EISDIR/),
            records: 1,
            since: expect.any(Number),
          },
        ]),
      );
      expect(blocked).toHaveLength(3);
      // The segment with the torn tail stays until its bad bytes are kept.
      expect(await readdir(spoolDir)).toContain(names[2]);
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(3);

      await chmod(locked, 0o600);
      await rmdir(join(spoolDir, 'set-aside.jsonl'));

      await eventually(async () => {
        expect((await readTranscript(target, 'd')).contents).toEqual(
          contents([...first, ...unreadable]),
        );
        expect((await blockedOf(target)).map((file) => file.source)).toEqual([names[3]]);
      }, 30_000);
      const setAside = (await readFile(join(spoolDir, 'set-aside.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(setAside).toEqual([
        expect.objectContaining({
          source: names[2],
          reason: 'torn tail (no newline)',
          raw: tornLine.toString('utf8'),
        }),
      ]);
      const left = await readdir(spoolDir);
      expect(left).not.toContain(names[1]);
      expect(left).not.toContain(names[2]);
      expect(left).toContain(names[3]);
    },
  );
});
