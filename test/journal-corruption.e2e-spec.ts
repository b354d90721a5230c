import { mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { encodeJournalLine } from '../src/spool/journal-codec.js';
import { formatSegmentName, ownerLockName } from '../src/spool/segment-names.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { type MessageRecord } from '../src/message/message-record.js';
import {
  appendMessage,
  faultSuite,
  holdSqliteLock,
  occurrences,
  readTranscript,
} from './support/fault-helpers.js';
import { temporaryDataDir } from './support/server-process.js';

// Journals left by instances that are gone, hand-written with the journal's own encoder and
// then damaged the ways disks and crashes damage files. A real server must replay every good
// record, set every bad one aside with its reason, touch nothing that is not its own, and
// never be stuck.
const { cleanups, faultTest, server: startWith } = faultSuite(30_000, { ADMIN_TOKEN: 't' });

const server = (dataDir: string) => startWith({ DATA_DIR: dataDir });
const DEAD = 'deadbeef';
const ADMIN = { authorization: 'Bearer t' };

async function spoolDirectory(): Promise<{ dataDir: string; spoolDir: string }> {
  const dataDir = await temporaryDataDir();
  cleanups.add(dataDir.remove);
  const spoolDir = join(dataDir.path, 'pending_messages');
  await mkdir(spoolDir, { recursive: true, mode: 0o700 });
  return { dataDir: dataDir.path, spoolDir };
}

function records(sessionId: string, count: number): MessageRecord[] {
  // Accepted a minute ago, so that anything the server accepts now sorts after them.
  const base = Date.now() - 60_000;
  return Array.from({ length: count }, (_, index) =>
    acceptedRecord(sessionId, `${sessionId}-${index}`, { acceptedAt: base + index }),
  );
}

/** A line of the journal with one byte of its message flipped: the checksum must catch it. */
function flipped(record: MessageRecord): Buffer {
  const line = encodeJournalLine(record);
  const at = line.indexOf(Buffer.from(record.content));
  line[at] ^= 0x01;
  return line;
}

/** A line with a good checksum in a format version this Scribe does not know. */
function futureVersion(record: MessageRecord): Buffer {
  const body = encodeJournalLine(record).toString('utf8').slice(18, -1).replace('"v":1', '"v":2');
  const checksum = crc32(Buffer.from(body)).toString(16).padStart(8, '0');
  return Buffer.from(`{"crc":"${checksum}",${body}\n`);
}

describe('a damaged journal found at start', () => {
  faultTest(
    'replays every good record in order, sets aside the torn, flipped and unknown ones with their reasons, removes what is empty, and stays writable',
    async () => {
      const { dataDir, spoolDir } = await spoolDirectory();
      const session = records('damaged', 8);
      const other = records('other', 2);
      const tornLine = encodeJournalLine(session[7]);
      const first = formatSegmentName(Date.now() - 60_000, 0, DEAD);
      const second = formatSegmentName(Date.now() - 59_000, 0, DEAD);
      const empty = formatSegmentName(Date.now() - 58_000, 0, DEAD);
      await writeFile(
        join(spoolDir, first),
        Buffer.concat([
          encodeJournalLine(session[0]),
          encodeJournalLine(other[0]),
          encodeJournalLine(session[1]),
          flipped(session[2]),
          encodeJournalLine(session[3]),
          futureVersion(session[4]),
        ]),
        { mode: 0o600 },
      );
      await writeFile(
        join(spoolDir, second),
        Buffer.concat([
          encodeJournalLine(session[5]),
          encodeJournalLine(other[1]),
          encodeJournalLine(session[6]),
          tornLine.subarray(0, Math.floor(tornLine.length / 2)),
        ]),
        { mode: 0o600 },
      );
      await writeFile(join(spoolDir, empty), '', { mode: 0o600 });
      // Debris: a foreign file, and temp files of a writability check, one old, one young.
      await writeFile(join(spoolDir, 'notes.txt'), 'operator notes\n');
      await writeFile(join(spoolDir, '.tmp-check-old'), 'ok');
      const longAgo = new Date(Date.now() - 10 * 60_000);
      await utimes(join(spoolDir, '.tmp-check-old'), longAgo, longAgo);
      await writeFile(join(spoolDir, '.tmp-check-young'), 'ok');

      const target = await server(dataDir);

      // Written back before the server said it was ready.
      expect(target.output()).toContain(
        'Boot replay stored 7 journaled message(s) of 2 session(s)',
      );
      const good = [0, 1, 3, 5, 6].map((index) => session[index]);
      const stored = await readTranscript(target, 'damaged');
      expect(stored.ids).toEqual(good.map((record) => record.id));
      expect((await readTranscript(target, 'other')).ids).toEqual(other.map((r) => r.id));

      // The bad lines are kept, with why, in set-aside.jsonl.
      const setAside = (await readFile(join(spoolDir, 'set-aside.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(setAside.map((entry) => [entry.source, entry.reason])).toEqual([
        [first, 'checksum mismatch (torn or corrupted line)'],
        [first, 'unknown format version 2'],
        [second, 'torn tail (no newline)'],
      ]);
      expect(setAside[0].raw).toBe(flipped(session[2]).toString('utf8'));
      expect(setAside[2].raw).toBe(
        tornLine.subarray(0, Math.floor(tornLine.length / 2)).toString(),
      );
      // Logged at start, but at ERROR: on stderr, which the ready line (stdout) and the answers
      // since do not wait for. Each is waited for.
      for (const reason of ['checksum mismatch', 'unknown format version 2', 'torn tail']) {
        await target.waitForOutput(new RegExp(`ERROR.*Set aside bytes at .*: ${reason}`));
      }
      expect(occurrences(target.output(), /ERROR.*Set aside bytes at/)).toBe(3);
      const metrics = await target.get('/metrics');
      expect(metrics.text).toContain('scribe_set_aside_total{reason="corrupt"} 3');
      // What an alert reads: the records waiting in set-aside.jsonl, from memory.
      expect(metrics.text).toMatch(/^scribe_spool_set_aside 3$/m);

      // Every segment is gone (drained, or empty), and the dead owner's lock with them; the
      // foreign file and the young temp file are left alone, the old temp file removed; the
      // spool now names its database.
      const left = (await readdir(spoolDir)).filter((name) => !name.startsWith('owner-'));
      expect(left.sort()).toEqual([
        '.tmp-check-young',
        'database.id',
        'notes.txt',
        'set-aside.jsonl',
      ]);
      expect(await readdir(spoolDir)).not.toContain(ownerLockName(DEAD));

      const status = await target.gql(
        '{ spoolStatus { messages setAside { source reason } setAsideCount } }',
        {},
        ADMIN,
      );
      expect(status.data.spoolStatus).toEqual({
        messages: 0,
        setAside: [
          { source: first, reason: 'checksum mismatch (torn or corrupted line)' },
          { source: first, reason: 'unknown format version 2' },
          { source: second, reason: 'torn tail (no newline)' },
          { source: 'notes.txt', reason: 'not a file of the journal: left untouched' },
        ],
        setAsideCount: 4,
      });

      // Not stuck: the session takes new messages, after the replayed ones.
      expect((await appendMessage(target, 'damaged', 'after')).status).toBe('PERSISTED');
      expect((await readTranscript(target, 'damaged')).contents).toEqual([
        ...good.map((record) => record.content),
        'after',
      ]);
    },
  );
});

describe("another instance's journal", () => {
  faultTest(
    'is left alone while its owner holds its lock, and replayed at the next start once the owner was killed',
    async () => {
      const { dataDir, spoolDir } = await spoolDirectory();
      const live = 'cafef00d';
      const owned = records('owned', 2);
      const segment = formatSegmentName(Date.now() - 60_000, 0, live);
      await writeFile(join(spoolDir, segment), Buffer.concat(owned.map(encodeJournalLine)));
      const lockPath = join(spoolDir, ownerLockName(live));
      await writeFile(lockPath, '');
      // The owner's lock, held by another process as the live instance would hold it.
      const owner = await holdSqliteLock(lockPath);
      cleanups.add(() => owner.kill());

      const first = await server(dataDir);
      expect(first.output()).not.toContain('Boot replay stored');
      expect((await readTranscript(first, 'owned')).messageCount).toBeNull();
      expect(await readdir(spoolDir)).toContain(segment);
      expect(await first.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });

      // kill -9 of the owner: the kernel lets go of its lock, and the journal is free to take.
      await owner.kill();
      const second = await server(dataDir);

      expect(second.output()).toContain(
        'Boot replay stored 2 journaled message(s) of 1 session(s)',
      );
      expect((await readTranscript(second, 'owned')).ids).toEqual(owned.map((r) => r.id));
      const left = await readdir(spoolDir);
      expect(left).not.toContain(segment);
      expect(left).not.toContain(ownerLockName(live));
    },
  );
});

describe("Scribe 0.1's spool files", () => {
  faultTest(
    'are journaled and replayed in acceptance order at start, while files of other tools and malformed ones are left untouched and listed',
    async () => {
      const { dataDir, spoolDir } = await spoolDirectory();
      const old = records('upgraded', 3);
      const legacy = (record: MessageRecord, reason: string) =>
        JSON.stringify({
          session_key: record.sessionId,
          reason,
          ts: record.acceptedAt,
          seq: 1,
          data: {
            session_id: record.sessionId,
            message: {
              id: record.id,
              role: record.role,
              content: record.content,
              clientMessageId: record.clientMessageId,
              toolName: null,
              toolCallId: null,
              toolCalls: null,
              metadata: { kept: true },
              acceptedAt: record.acceptedAt,
              orderKey: record.orderKey,
            },
          },
        });
      // Named so that file-name order is not acceptance order: order keys decide.
      await writeFile(join(spoolDir, 'pending-c.json'), legacy(old[0], 'transcript_cap_drop'));
      await writeFile(join(spoolDir, 'pending-b.json'), legacy(old[1], 'shutdown'));
      await writeFile(join(spoolDir, 'pending-a.json'), legacy(old[2], 'shutdown'));
      const foreign = legacy(records('foreign', 1)[0], 'some_other_tool');
      await writeFile(join(spoolDir, 'pending-foreign.json'), foreign);
      await writeFile(
        join(spoolDir, 'pending-broken.json'),
        '{"session_key": "x", "reason": "shutdown"',
      );

      const target = await server(dataDir);

      expect(target.output()).toContain(
        'Journaled 3 message(s) found in Scribe 0.1 spool files, and deleted the files',
      );
      expect(target.output()).toContain(
        'Boot replay stored 3 journaled message(s) of 1 session(s)',
      );
      expect((await readTranscript(target, 'upgraded')).ids).toEqual(old.map((r) => r.id));
      expect(
        (await readdir(spoolDir)).filter((name) => name.startsWith('pending-')).sort(),
      ).toEqual(['pending-broken.json', 'pending-foreign.json']);
      expect(await readFile(join(spoolDir, 'pending-foreign.json'), 'utf8')).toBe(foreign);
      const status = await target.gql('{ spoolStatus { setAside { source reason } } }', {}, ADMIN);
      expect(status.data.spoolStatus.setAside).toEqual([
        { source: 'pending-broken.json', reason: 'not a file of the journal: left untouched' },
        { source: 'pending-foreign.json', reason: 'not a file of the journal: left untouched' },
      ]);
    },
  );
});
