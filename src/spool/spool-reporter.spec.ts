import { SpoolDirectoryError } from './spool-directory.js';
import { SpoolReporter } from './spool-reporter.js';
import { type SetAsideEntry } from './set-aside-entry.js';

/** Counters and log lines as the reporter left them. */
function harness() {
  const counted = { writes: 0, failures: 0, setAside: [] as { reason: string; n: number }[] };
  const lines: { level: 'log' | 'warn' | 'error'; text: string }[] = [];
  const metrics = {
    spoolWrites: { inc: (n = 1) => void (counted.writes += n) },
    spoolWriteFailures: { inc: (n = 1) => void (counted.failures += n) },
    setAside: {
      inc: (labels: { reason: string }, n = 1) => void counted.setAside.push({ ...labels, n }),
    },
  };
  const logger = {
    log: (text: string) => void lines.push({ level: 'log', text }),
    warn: (text: string) => void lines.push({ level: 'warn', text }),
    error: (text: string) => void lines.push({ level: 'error', text }),
  };
  const reporter = new SpoolReporter('/spool', metrics as never, logger);
  return { reporter, counted, lines };
}

const failed = (message: string) => ({ kind: 'unavailable' as const, error: new Error(message) });
const written = { kind: 'written' as const, records: [] };

describe('SpoolReporter', () => {
  it('counts the records of every write and says nothing while the disk is fine', () => {
    const { reporter, counted, lines } = harness();
    reporter.written(written as never, 3);
    reporter.written(written as never, 2);
    expect(counted).toMatchObject({ writes: 5, failures: 0 });
    expect(lines).toEqual([]);
  });

  it('counts every failed write but warns once per reason, and once more when it changes', () => {
    const { reporter, counted, lines } = harness();
    reporter.written(failed('ENOSPC: no space left on device'), 4);
    reporter.written(failed('ENOSPC: no space left on device'), 1);
    reporter.written(failed('EACCES: permission denied'), 1);
    expect(counted).toMatchObject({ writes: 0, failures: 3 });
    expect(lines).toEqual([
      {
        level: 'warn',
        text: 'on-disk spool unavailable at /spool: ENOSPC: no space left on device',
      },
      { level: 'warn', text: 'on-disk spool unavailable at /spool: EACCES: permission denied' },
    ]);
  });

  it('says once that the disk is writable again, and warns anew at the next failure', () => {
    const { reporter, lines } = harness();
    reporter.written(failed('ENOSPC'), 1);
    reporter.written(written as never, 1);
    reporter.written(written as never, 1);
    reporter.written(failed('ENOSPC'), 1);
    expect(lines.map((line) => `${line.level}: ${line.text}`)).toEqual([
      'warn: on-disk spool unavailable at /spool: ENOSPC',
      'log: on-disk spool at /spool writable again',
      'warn: on-disk spool unavailable at /spool: ENOSPC',
    ]);
  });

  it('counts set-aside records by reason and names each once at ERROR: a message, or bytes of a file', () => {
    const { reporter, counted, lines } = harness();
    const refused: SetAsideEntry = {
      at: 1,
      reason: 'SQLITE_CONSTRAINT',
      messageId: 'm-1',
      sessionId: 's-1',
      source: 'journal-x.jsonl',
    };
    const corrupt = { at: 1, reason: 'torn tail', source: 'journal-y.jsonl', offset: 77 };
    const unplaced = { at: 1, reason: 'not a journal record', source: 'foreign.txt' };
    reporter.setAside([refused], 'refused');
    reporter.setAside([corrupt, unplaced] as SetAsideEntry[], 'corrupt');
    expect(counted.setAside).toEqual([
      { reason: 'refused', n: 1 },
      { reason: 'corrupt', n: 2 },
    ]);
    expect(lines).toEqual([
      {
        level: 'error',
        text: 'Set aside message m-1 of session s-1: SQLITE_CONSTRAINT; kept in /spool/set-aside.jsonl',
      },
      {
        level: 'error',
        text: 'Set aside bytes at journal-y.jsonl:77: torn tail; kept in /spool/set-aside.jsonl',
      },
      {
        level: 'error',
        text: 'Set aside bytes at foreign.txt:0: not a journal record; kept in /spool/set-aside.jsonl',
      },
    ]);
  });

  it('says at ERROR that a file is blocked, with its records or not, and once that it is back', () => {
    const { reporter, lines } = harness();
    reporter.blocked({ source: 'journal-x.jsonl', reason: 'EACCES', records: 4, since: 1 });
    reporter.blocked({ source: 'owner-d.lock', reason: 'not SQLite', records: null, since: 1 });
    reporter.unblocked({ source: 'journal-x.jsonl', reason: 'EACCES', records: 4, since: 1 }, 2500);
    expect(lines).toEqual([
      {
        level: 'error',
        text: 'Journal: /spool/journal-x.jsonl cannot be used: EACCES; 4 record(s) stay owed and it is tried again with backoff (see spoolStatus.blocked)',
      },
      {
        level: 'error',
        text: 'Journal: /spool/owner-d.lock cannot be used: not SQLite; what it holds stays owed and it is tried again with backoff (see spoolStatus.blocked)',
      },
      {
        level: 'log',
        text: 'Journal: /spool/journal-x.jsonl usable again after 2500 ms; its records replay',
      },
    ]);
  });

  it('says at ERROR, once, that SPOOL_DIR is unusable: no retry mends it', () => {
    const { reporter, counted, lines } = harness();
    const refused = {
      kind: 'unavailable' as const,
      error: new SpoolDirectoryError('/spool', 'a symlink'),
    };
    reporter.written(refused, 1);
    reporter.written(refused, 2);
    expect(counted.failures).toBe(2);
    expect(lines).toEqual([
      {
        level: 'error',
        text: 'on-disk spool unavailable at /spool: SPOOL_DIR_UNUSABLE: SPOOL_DIR /spool is a symlink: nothing is journaled there until it is a directory this process can write',
      },
    ]);
  });

  it('says what a lost segment held is BUFFERED, not journaled again, until it is', () => {
    const { reporter, lines } = harness();
    reporter.segmentLost({ name: 'journal-a.jsonl', what: 'deleted', orphaned: 3, lost: 2 });
    reporter.segmentLost({ name: 'journal-b.jsonl', what: 'replaced', orphaned: 0, lost: 0 });
    reporter.rejournaled(3, 'journal-c.jsonl');
    expect(lines).toEqual([
      {
        level: 'error',
        text: 'Journal: segment /spool/journal-a.jsonl was deleted under the running instance; 3 record(s) still in memory are BUFFERED (memory only) until a new segment can take them; 2 record(s) only it held are LOST (answered QUEUED, never stored)',
      },
      {
        level: 'error',
        text: 'Journal: segment /spool/journal-b.jsonl was replaced under the running instance',
      },
      {
        level: 'log',
        text: 'Journal: 3 record(s) journaled again into segment /spool/journal-c.jsonl',
      },
    ]);
  });

  it('says a segment counted lost is back, and what becomes of its records', () => {
    const { reporter, lines } = harness();
    reporter.segmentFound('journal-a.jsonl', 2);
    expect(lines).toEqual([
      {
        level: 'log',
        text: 'Journal: segment /spool/journal-a.jsonl is back; its 2 record(s) counted LOST are on disk and are stored after the next start',
      },
    ]);
  });

  it('names each kind of entry that is not a file in its WARN', () => {
    const { reporter, lines } = harness();
    reporter.irregular([
      { name: 'a', kind: 'symlink' },
      { name: 'b', kind: 'directory' },
      { name: 'c', kind: 'other' },
    ]);
    expect(lines.map(({ text }) => text.split(', not a file')[0])).toEqual([
      'Journal: /spool/a is a symlink',
      'Journal: /spool/b is a directory',
      'Journal: /spool/c is a special file (a FIFO, a socket or a device)',
    ]);
  });
});
