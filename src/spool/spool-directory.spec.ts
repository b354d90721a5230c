import { jest } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import {
  OWNED_SPOOL_REASONS,
  SPOOL_REASON_CAP_DROP,
  SPOOL_REASON_SHUTDOWN,
  SpoolDirectory,
  type SpoolEvents,
} from './spool-directory.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';

const makeRecord = acceptedRecord;

// Written independently of the implementation, so that the on-disk format is pinned here.
function spoolFileBody(record: MessageRecord, reason: string, ts = 1, seq = 1) {
  return {
    session_key: record.sessionId,
    reason,
    ts,
    seq,
    data: {
      session_id: record.sessionId,
      message: {
        id: record.id,
        role: record.role,
        content: record.content,
        clientMessageId: record.clientMessageId,
        toolName: record.toolName,
        toolCallId: record.toolCallId,
        toolCalls: record.toolCalls,
        metadata: record.metadata,
        acceptedAt: record.acceptedAt,
        orderKey: record.orderKey,
      },
    },
  };
}

function collector() {
  const seen: MessageRecord[] = [];
  const store = async (record: MessageRecord) => {
    seen.push(record);
  };
  return { seen, store };
}

function contents(records: { content: string }[]): string[] {
  return records.map((record) => record.content);
}

async function modeOf(target: string): Promise<number> {
  return (await fs.stat(target)).mode & 0o777;
}

describe(SpoolDirectory.name, () => {
  let directory: string;

  beforeEach(async () => {
    directory = await fs.mkdtemp(os.tmpdir() + '/scribe-spool-');
  });

  afterEach(async () => {
    await fs.rm(directory, { recursive: true, force: true });
  });

  async function pendingFiles(): Promise<string[]> {
    return (await fs.readdir(directory)).filter((name) => name.startsWith('pending-')).sort();
  }

  async function writeByHand(fileName: string, content: unknown): Promise<void> {
    const text = typeof content === 'string' ? content : JSON.stringify(content);
    await fs.writeFile(path.join(directory, fileName), text);
  }

  describe('write and drainSession', () => {
    it('replays a session in drop order and deletes its files', async () => {
      const sut = new SpoolDirectory(directory);
      expect(await sut.init()).toEqual({ usable: true });
      for (const content of ['c0', 'c1', 'c2']) {
        await sut.write(makeRecord('s', content), SPOOL_REASON_CAP_DROP);
      }
      const { seen, store } = collector();

      const result = await sut.drainSession('s', store);

      expect(result).toEqual({ replayed: 3, remaining: 0 });
      expect(contents(seen)).toEqual(['c0', 'c1', 'c2']);
      expect(await pendingFiles()).toEqual([]);
    });

    it('keeps drop order when the clock stands still or goes backwards between writes', async () => {
      const clock = [5_000, 5_000, 4_000, 4_000, 3_000];
      const sut = new SpoolDirectory(directory, undefined, () => clock.shift() ?? 0);
      await sut.init();
      for (const content of ['c0', 'c1', 'c2', 'c3', 'c4']) {
        await sut.write(makeRecord('s', content), SPOOL_REASON_CAP_DROP);
      }
      const { seen, store } = collector();

      await sut.drainSession('s', store);

      expect(contents(seen)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    });

    it('names files so that two instances sharing the directory list in drop order', async () => {
      let clock = 1_000;
      const first = new SpoolDirectory(directory, undefined, () => clock);
      const second = new SpoolDirectory(directory, undefined, () => clock);
      await first.init();
      await second.init();
      for (const [index, writer] of [first, second, first, second, second, first].entries()) {
        clock += 1;
        await writer.write(makeRecord('s', `c${index}`), SPOOL_REASON_CAP_DROP);
      }

      expect(contents((await first.list()).map((entry) => entry.record))).toEqual([
        'c0',
        'c1',
        'c2',
        'c3',
        'c4',
        'c5',
      ]);
    });

    it('lists in file-name order, not creation order', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      // Created newest name first, so that creation order and name order disagree.
      for (const index of [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]) {
        const body = spoolFileBody(makeRecord('s', `c${index}`), SPOOL_REASON_CAP_DROP);
        await writeByHand(`pending-00000000000000${index}.json`, body);
      }

      expect(contents((await sut.list()).map((entry) => entry.record))).toEqual([
        'c0',
        'c1',
        'c2',
        'c3',
        'c4',
        'c5',
        'c6',
        'c7',
        'c8',
        'c9',
      ]);
    });

    it('names files after the ones already there when the clock went back across a restart', async () => {
      const before = new SpoolDirectory(directory, undefined, () => 10_000);
      await before.init();
      await before.write(makeRecord('s', 'before restart'), SPOOL_REASON_SHUTDOWN);
      const sut = new SpoolDirectory(directory, undefined, () => 9_000);
      await sut.init();

      await sut.write(makeRecord('s', 'after restart'), SPOOL_REASON_CAP_DROP);

      expect(contents((await sut.list()).map((entry) => entry.record))).toEqual([
        'before restart',
        'after restart',
      ]);
    });

    it('reads back exactly the record that was written', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      const record = makeRecord('s', 'with everything', {
        role: MessageRole.ASSISTANT,
        clientMessageId: 'client-1',
        toolName: 'search',
        toolCallId: 'call-1',
        toolCalls: [{ id: 'call-1', arguments: { query: 'x', limit: 3, nested: [true, null] } }],
        metadata: { model: 'm', tokens: 12.5, tags: ['a', 'b'] },
        acceptedAt: 1_700_000_000_123,
      });
      await sut.write(record, SPOOL_REASON_SHUTDOWN);
      const { seen, store } = collector();

      await sut.drainSession('s', store);

      expect(seen).toStrictEqual([record]);
    });

    it('does not use the session id in any path', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();

      const fileName = await sut.write(makeRecord('../escape', 'c0'), SPOOL_REASON_CAP_DROP);

      expect(fileName).toMatch(/^pending-\d{15}\.\d{6}\.[0-9a-f]{8}\.json$/);
      expect(await fs.readdir(directory)).toEqual([fileName]);
      expect(await fs.readdir(path.dirname(directory))).not.toContain('escape');
    });

    it('recreates the directory when it went missing after init', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await fs.rm(directory, { recursive: true });

      await sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP);

      expect(await modeOf(directory)).toBe(0o700);
      expect(await pendingFiles()).toHaveLength(1);
    });

    it('reports writes and replays through the events', async () => {
      const events = {
        written: jest.fn<NonNullable<SpoolEvents['written']>>(),
        replayed: jest.fn<NonNullable<SpoolEvents['replayed']>>(),
      };
      const sut = new SpoolDirectory(directory, events);
      await sut.init();
      await sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP);
      await sut.write(makeRecord('s', 'c1'), SPOOL_REASON_SHUTDOWN);

      await sut.drainSession('s', collector().store);

      expect(events.written.mock.calls).toEqual([[SPOOL_REASON_CAP_DROP], [SPOOL_REASON_SHUTDOWN]]);
      expect(events.replayed.mock.calls).toEqual([[2]]);
    });
  });

  describe('what a drain touches', () => {
    it('leaves files of other reasons alone', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await sut.write(makeRecord('s', 'owned'), SPOOL_REASON_CAP_DROP);
      const foreign = makeRecord('s', 'foreign');
      await writeByHand('pending-999999999999999.json', spoolFileBody(foreign, 'something_else'));
      const { seen, store } = collector();

      const result = await sut.drainSession('s', store);

      expect(result).toEqual({ replayed: 1, remaining: 0 });
      expect(contents(seen)).toEqual(['owned']);
      expect(await pendingFiles()).toEqual(['pending-999999999999999.json']);
      expect(await sut.list({ reasons: OWNED_SPOOL_REASONS })).toEqual([]);
      expect((await sut.list()).map((entry) => entry.reason)).toEqual(['something_else']);
    });

    it('never judges or moves a file of another reason, whatever its message looks like', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await writeByHand('pending-999999999999998.json', {
        session_key: 's',
        reason: 'gateway_flush',
        ts: 1,
        seq: 1,
        data: { key1: 'hello' },
      });
      const { store } = collector();

      await sut.drainSession('s', store);
      await sut.list();
      await sut.stats();

      expect(await pendingFiles()).toEqual(['pending-999999999999998.json']);
      expect((await fs.readdir(directory)).filter((name) => name.endsWith('.bad'))).toEqual([]);
    });

    it("reads only the requested session's files once it has seen the others", async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await sut.write(makeRecord('a', 'a0'), SPOOL_REASON_CAP_DROP);
      const bFile = await sut.write(makeRecord('b', 'b0'), SPOOL_REASON_CAP_DROP);
      await sut.list();
      // Were b's file read again, this would set it aside as unparsable.
      await fs.writeFile(path.join(directory, bFile), '{not json');
      const { seen, store } = collector();

      await sut.drainSession('a', store);

      expect(contents(seen)).toEqual(['a0']);
      expect(await pendingFiles()).toEqual([bFile]);
    });

    it('drains only the requested session', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await sut.write(makeRecord('a', 'a0'), SPOOL_REASON_CAP_DROP);
      const bFile = await sut.write(makeRecord('b', 'b0'), SPOOL_REASON_CAP_DROP);
      await sut.write(makeRecord('a', 'a1'), SPOOL_REASON_SHUTDOWN);
      const { seen, store } = collector();

      const result = await sut.drainSession('a', store);

      expect(result).toEqual({ replayed: 2, remaining: 0 });
      expect(contents(seen)).toEqual(['a0', 'a1']);
      expect(await pendingFiles()).toEqual([bFile]);
      expect((await sut.list({ sessionId: 'b' })).map((entry) => entry.fileName)).toEqual([bFile]);
    });

    it('keeps the failed file and every later one, and a later drain finishes in order', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      const names: string[] = [];
      for (const content of ['c0', 'c1', 'c2']) {
        names.push(await sut.write(makeRecord('s', content), SPOOL_REASON_CAP_DROP));
      }
      const failure = new Error('database down');
      const failingStore = jest.fn(async (record: MessageRecord) => {
        if (record.content === 'c1') throw failure;
      });

      const failed = await sut.drainSession('s', failingStore);

      expect(failed).toEqual({ replayed: 1, remaining: 2, error: failure });
      expect(contents(failingStore.mock.calls.map(([record]) => record))).toEqual(['c0', 'c1']);
      expect(await pendingFiles()).toEqual([names[1], names[2]]);

      const { seen, store } = collector();
      const healed = await sut.drainSession('s', store);

      expect(healed).toEqual({ replayed: 2, remaining: 0 });
      expect(contents(seen)).toEqual(['c1', 'c2']);
      expect(await pendingFiles()).toEqual([]);
    });

    it('removes one entry on request', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP);
      const kept = await sut.write(makeRecord('s', 'c1'), SPOOL_REASON_CAP_DROP);
      const [first] = await sut.list();

      await sut.remove(first);

      expect(await pendingFiles()).toEqual([kept]);
    });
  });

  describe('files that cannot be used', () => {
    it('sets aside corrupt, truncated and wrongly shaped files and still drains the good ones', async () => {
      const badFile = jest.fn<NonNullable<SpoolEvents['badFile']>>();
      const sut = new SpoolDirectory(directory, { badFile });
      await sut.init();
      await sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP);
      const goodText = JSON.stringify(
        spoolFileBody(makeRecord('s', 'lost'), SPOOL_REASON_CAP_DROP),
      );
      await writeByHand('pending-000000000000001.json', '{not json');
      await writeByHand('pending-000000000000002.json', goodText.slice(0, goodText.length / 2));
      await writeByHand('pending-000000000000003.json', { hello: 'world' });
      await writeByHand('notes.txt', '{not json either');
      await sut.write(makeRecord('s', 'c1'), SPOOL_REASON_CAP_DROP);
      const { seen, store } = collector();

      const result = await sut.drainSession('s', store);

      expect(result).toEqual({ replayed: 2, remaining: 0 });
      expect(contents(seen)).toEqual(['c0', 'c1']);
      expect((await fs.readdir(directory)).sort()).toEqual([
        'notes.txt',
        'pending-000000000000001.json.bad',
        'pending-000000000000002.json.bad',
        'pending-000000000000003.json.bad',
      ]);
      // Files are read several at a time, so the events come in completion order.
      expect(badFile.mock.calls.map(([fileName]) => fileName).sort()).toEqual([
        'pending-000000000000001.json',
        'pending-000000000000002.json',
        'pending-000000000000003.json',
      ]);
      expect(badFile.mock.calls.every(([, error]) => error.length > 0)).toBe(true);
      expect(await fs.readFile(path.join(directory, 'notes.txt'), 'utf8')).toBe('{not json either');
    });

    const valid = () => spoolFileBody(makeRecord('s', 'c'), SPOOL_REASON_CAP_DROP);
    const withMessage = (change: Record<string, unknown>) => {
      const body = valid();
      return { ...body, data: { ...body.data, message: { ...body.data.message, ...change } } };
    };
    it.each<[string, () => unknown]>([
      ['a top-level array', () => [valid()]],
      ['no session_key', () => ({ ...valid(), session_key: undefined })],
      ['a numeric reason', () => ({ ...valid(), reason: 7 })],
      ['a string ts', () => ({ ...valid(), ts: '1' })],
      ['no seq', () => ({ ...valid(), seq: undefined })],
      ['no data', () => ({ ...valid(), data: null })],
      [
        'another session_id in data',
        () => ({ ...valid(), data: { ...valid().data, session_id: 'x' } }),
      ],
      ['no message', () => ({ ...valid(), data: { session_id: 's' } })],
      ['no id', () => withMessage({ id: undefined })],
      ['an unknown role', () => withMessage({ role: 'ROBOT' })],
      ['a numeric content', () => withMessage({ content: 5 })],
      ['a numeric clientMessageId', () => withMessage({ clientMessageId: 5 })],
      ['a missing toolName', () => withMessage({ toolName: undefined })],
      ['an object toolCallId', () => withMessage({ toolCallId: {} })],
      ['a string acceptedAt', () => withMessage({ acceptedAt: '2024-01-01' })],
      ['no orderKey', () => withMessage({ orderKey: undefined })],
    ])('sets aside a file with %s', async (_shape, body) => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      await writeByHand('pending-000000000000001.json', body());

      expect(await sut.list()).toEqual([]);
      expect(await fs.readdir(directory)).toEqual(['pending-000000000000001.json.bad']);
    });

    it('accepts a hand-written file in the documented format', async () => {
      const sut = new SpoolDirectory(directory);
      await sut.init();
      const record = makeRecord('s', 'by hand', { toolCalls: { a: 1 }, metadata: [1] });
      await writeByHand('pending-000000000000001.json', spoolFileBody(record, 'x', 42, 7));

      expect(await sut.list()).toEqual([
        {
          fileName: 'pending-000000000000001.json',
          sessionId: 's',
          reason: 'x',
          ts: 42,
          seq: 7,
          record,
        },
      ]);
    });
  });

  describe('init', () => {
    it('deletes leftover temp files but keeps one a live writer may still be using', async () => {
      await writeByHand('.tmp-pending-old.json', '{"half":');
      const longAgo = new Date(Date.now() - 60 * 60_000);
      await fs.utimes(path.join(directory, '.tmp-pending-old.json'), longAgo, longAgo);
      await writeByHand('.tmp-pending-fresh.json', '{"half":');
      const sut = new SpoolDirectory(directory);

      expect(await sut.init()).toEqual({ usable: true });

      expect(await fs.readdir(directory)).toEqual(['.tmp-pending-fresh.json']);
      expect(await sut.list()).toEqual([]);
    });

    it('creates missing directories with mode 0700', async () => {
      const spool = path.join(directory, 'nested', 'spool');
      const sut = new SpoolDirectory(spool);

      expect(await sut.init()).toEqual({ usable: true });

      expect(await modeOf(spool)).toBe(0o700);
    });

    it('reports a path under a regular file as unusable without throwing, and write then throws', async () => {
      await writeByHand('a-file', 'x');
      const sut = new SpoolDirectory(path.join(directory, 'a-file', 'spool'));

      const result = await sut.init();

      expect(result.usable).toBe(false);
      expect(result.error).toEqual(expect.stringContaining('ENOTDIR'));
      await expect(sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP)).rejects.toThrow();
      expect(await fs.readdir(directory)).toEqual(['a-file']);
    });

    it('reports a path that is itself a regular file as unusable, and write then throws', async () => {
      await writeByHand('a-file', 'x');
      const sut = new SpoolDirectory(path.join(directory, 'a-file'));

      expect((await sut.init()).usable).toBe(false);
      await expect(sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP)).rejects.toThrow();
      expect(await fs.readFile(path.join(directory, 'a-file'), 'utf8')).toBe('x');
    });
  });

  describe('file format', () => {
    it('writes mode 0600 files with exactly the documented keys and no temp file left', async () => {
      const sut = new SpoolDirectory(directory, undefined, () => 1_234);
      await sut.init();
      const earlier = await sut.write(makeRecord('t', 'x'), SPOOL_REASON_CAP_DROP);
      const record = makeRecord('s', 'c0', { toolCalls: undefined, metadata: undefined });

      const fileName = await sut.write(record, SPOOL_REASON_SHUTDOWN);

      const file = path.join(directory, fileName);
      expect(await modeOf(file)).toBe(0o600);
      expect((await fs.readdir(directory)).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
      const content = JSON.parse(await fs.readFile(file, 'utf8'));
      expect(Object.keys(content).sort()).toEqual(['data', 'reason', 'seq', 'session_key', 'ts']);
      expect(Object.keys(content.data).sort()).toEqual(['message', 'session_id']);
      expect(Object.keys(content.data.message).sort()).toEqual(
        [
          'id',
          'role',
          'content',
          'clientMessageId',
          'toolName',
          'toolCallId',
          'toolCalls',
          'metadata',
          'acceptedAt',
          'orderKey',
        ].sort(),
      );
      expect(content).toEqual({
        ...spoolFileBody({ ...record, toolCalls: null, metadata: null }, SPOOL_REASON_SHUTDOWN),
        ts: 1_234,
        seq: expect.any(Number),
      });
      const earlierContent = JSON.parse(await fs.readFile(path.join(directory, earlier), 'utf8'));
      expect(content.seq).toBeGreaterThan(earlierContent.seq);
    });
  });

  describe('modes under a restrictive umask', () => {
    let previousUmask: number;

    beforeEach(() => {
      previousUmask = process.umask(0o277);
    });

    afterEach(() => {
      process.umask(previousUmask);
    });

    it('still gives the directory mode 0700 and files mode 0600', async () => {
      const spool = path.join(directory, 'spool');
      const sut = new SpoolDirectory(spool);
      await sut.init();

      const fileName = await sut.write(makeRecord('s', 'c0'), SPOOL_REASON_CAP_DROP);

      expect(await modeOf(spool)).toBe(0o700);
      expect(await modeOf(path.join(spool, fileName))).toBe(0o600);
    });
  });

  describe('stats', () => {
    it('counts files per session and reason and ages the oldest one', async () => {
      let clock = 1_000;
      const sut = new SpoolDirectory(directory, undefined, () => clock);
      await sut.init();
      expect(await sut.stats()).toEqual({
        files: 0,
        bySession: [],
        oldestFileAgeMs: null,
        badFiles: 0,
      });
      for (const [sessionId, reason, at] of [
        ['b', SPOOL_REASON_CAP_DROP, 1_000],
        ['a', SPOOL_REASON_CAP_DROP, 1_500],
        ['a', SPOOL_REASON_CAP_DROP, 1_600],
        ['a', SPOOL_REASON_SHUTDOWN, 2_000],
      ] as const) {
        clock = at;
        await sut.write(makeRecord(sessionId, 'c'), reason);
      }
      await writeByHand('pending-000000000000001.json', '{not json');
      clock = 4_000;

      expect(await sut.stats()).toEqual({
        files: 4,
        bySession: [
          { sessionId: 'a', reason: SPOOL_REASON_SHUTDOWN, files: 1 },
          { sessionId: 'a', reason: SPOOL_REASON_CAP_DROP, files: 2 },
          { sessionId: 'b', reason: SPOOL_REASON_CAP_DROP, files: 1 },
        ],
        oldestFileAgeMs: 3_000,
        badFiles: 1,
      });
    });
  });

  describe('checkWritable', () => {
    it('resolves for a usable directory and leaves nothing behind', async () => {
      const sut = new SpoolDirectory(directory);

      await expect(sut.checkWritable()).resolves.toBeUndefined();

      expect(await fs.readdir(directory)).toEqual([]);
    });

    it('throws for a path under a regular file', async () => {
      await writeByHand('a-file', 'x');
      const sut = new SpoolDirectory(path.join(directory, 'a-file', 'spool'));

      await expect(sut.checkWritable()).rejects.toThrow();
    });
  });
});
