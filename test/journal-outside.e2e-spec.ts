import { mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeJournalLine } from '../src/spool/journal-codec.js';
import { formatSegmentName, ownerLockName } from '../src/spool/segment-names.js';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { type MessageRecord } from '../src/message/message-record.js';
import { appendMessage, faultSuite, occurrences, readTranscript } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// Finding 10 of issue 19: nothing outside SPOOL_DIR is touched. Symlinks (and directories)
// stand where the journal's files belong, pointing at files outside; the server must leave
// those files exactly as they were, and list what it refused as foreign, with why.
const { faultTest, dataDirectory, server } = faultSuite(30_000, { ADMIN_TOKEN: 't' });
const ADMIN = { authorization: 'Bearer t' };

interface Dirs {
  dataDir: string;
  spoolDir: string;
  outside: string;
}

async function directories(): Promise<Dirs> {
  const dataDir = await dataDirectory();
  const spoolDir = join(dataDir, 'pending_messages');
  await mkdir(spoolDir, { recursive: true, mode: 0o700 });
  const outside = join(await dataDirectory(), 'outside');
  await mkdir(outside);
  return { dataDir, spoolDir, outside };
}

function records(sessionId: string, count: number): MessageRecord[] {
  const base = Date.now() - 60_000;
  return Array.from({ length: count }, (_, index) =>
    acceptedRecord(sessionId, `${sessionId}-${index}`, { acceptedAt: base + index }),
  );
}

/** An outside file of `content` with mode 0644; returns how to read back its mode and bytes. */
async function outsideFile(path: string, content: string) {
  await writeFile(path, content, { mode: 0o644 });
  return async () => ({
    mode: (await stat(path)).mode & 0o777,
    content: await readFile(path, 'utf8'),
  });
}

async function foreign(target: ServerProcess): Promise<{ source: string; reason: string }[]> {
  const response = await target.gql('{ spoolStatus { setAside { source reason at } } }', {}, ADMIN);
  if (response.errors) throw new Error(JSON.stringify(response.errors));
  return response.data.spoolStatus.setAside
    .filter((entry: { at: number | null }) => entry.at === null)
    .map(({ source, reason }: { source: string; reason: string }) => ({ source, reason }));
}

const SYMLINK = 'symlink: not a regular file, left untouched (nothing in or behind it is read)';
const DIRECTORY = 'directory: not a regular file, left untouched (nothing in or behind it is read)';

describe('symlinks and directories where the journal keeps its files', () => {
  faultTest(
    'an owner lock that is a symlink: the outside file keeps its mode and bytes, a dangling one creates nothing, both are listed as foreign',
    async () => {
      const { dataDir, spoolDir, outside } = await directories();
      // An empty file is a valid empty SQLite database: SQLite would lock it and chmod it.
      const existing = await outsideFile(join(outside, 'existing.db'), '');
      const missing = join(outside, 'never-created.db');
      await symlink(join(outside, 'existing.db'), join(spoolDir, ownerLockName('deadbeef')));
      await symlink(missing, join(spoolDir, ownerLockName('cafebabe')));
      for (const owner of ['deadbeef', 'cafebabe']) {
        const segment = formatSegmentName(Date.now() - 60_000, 0, owner);
        await writeFile(
          join(spoolDir, segment),
          Buffer.concat(records(owner, 2).map(encodeJournalLine)),
        );
      }

      const target = await server({ DATA_DIR: dataDir });

      expect(await existing()).toEqual({ mode: 0o644, content: '' });
      expect(await readdir(outside)).toEqual(['existing.db']);
      expect(await foreign(target)).toEqual(
        [
          { source: ownerLockName('cafebabe'), reason: SYMLINK },
          { source: ownerLockName('deadbeef'), reason: SYMLINK },
        ].sort((left, right) => (left.source < right.source ? -1 : 1)),
      );
      expect((await appendMessage(target, 'alive', 'still takes appends')).status).toBe(
        'PERSISTED',
      );
      expect(await existing()).toEqual({ mode: 0o644, content: '' });
    },
  );

  faultTest(
    'a set-aside log that is a symlink: nothing is appended to the outside file, and it is listed as foreign',
    async () => {
      const { dataDir, spoolDir, outside } = await directories();
      const log = await outsideFile(join(outside, 'log.jsonl'), 'outside log\n');
      await symlink(join(outside, 'log.jsonl'), join(spoolDir, 'set-aside.jsonl'));
      const [good, bad] = records('set-aside', 2);
      const damaged = encodeJournalLine(bad);
      damaged[damaged.indexOf(Buffer.from(bad.content))] ^= 0x01;
      const segment = formatSegmentName(Date.now() - 60_000, 0, 'deadbeef');
      await writeFile(join(spoolDir, segment), Buffer.concat([encodeJournalLine(good), damaged]));

      const target = await server({ DATA_DIR: dataDir });

      expect(await log()).toEqual({ mode: 0o644, content: 'outside log\n' });
      expect(await foreign(target)).toEqual([{ source: 'set-aside.jsonl', reason: SYMLINK }]);
      // The damaged line stays where it was: it could not be kept anywhere else.
      expect(await readdir(spoolDir)).toContain(segment);
      expect(await log()).toEqual({ mode: 0o644, content: 'outside log\n' });
    },
  );

  faultTest(
    'segments replaced by a symlink and by a directory: listed as foreign with why, warned about once each, the outside file untouched and its records not replayed',
    async () => {
      const { dataDir, spoolDir, outside } = await directories();
      const linked = records('linked', 3);
      const lines = Buffer.concat(linked.map(encodeJournalLine)).toString('utf8');
      const outsideSegment = await outsideFile(join(outside, 'segment.jsonl'), lines);
      const asLink = formatSegmentName(Date.now() - 60_000, 0, 'deadbeef');
      const asDirectory = formatSegmentName(Date.now() - 59_000, 0, 'deadbeef');
      await symlink(join(outside, 'segment.jsonl'), join(spoolDir, asLink));
      await mkdir(join(spoolDir, asDirectory));
      await writeFile(join(spoolDir, asDirectory, 'inside'), 'x');

      const target = await server({ DATA_DIR: dataDir });

      const expected = [
        { source: asLink, reason: SYMLINK },
        { source: asDirectory, reason: DIRECTORY },
      ];
      expect(await foreign(target)).toEqual(expected);
      expect(await foreign(target)).toEqual(expected);
      expect(occurrences(target.output(), `${spoolDir}/${asLink} is a symlink, not a file`)).toBe(
        1,
      );
      expect(
        occurrences(target.output(), `${spoolDir}/${asDirectory} is a directory, not a file`),
      ).toBe(1);
      expect(target.output()).toMatch(/WARN.*is a symlink, not a file/);
      expect(await outsideSegment()).toEqual({ mode: 0o644, content: lines });
      expect((await readTranscript(target, 'linked')).messageCount).toBeNull();
      expect(await readdir(join(spoolDir, asDirectory))).toEqual(['inside']);
    },
  );
});
