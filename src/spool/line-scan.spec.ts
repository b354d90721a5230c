import {
  LINE_READ_BYTES,
  readLineAt,
  scanLines,
  type LineAt,
  SCAN_CHUNK_BYTES,
} from './line-scan.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { fsError } from './testing/file-faults.js';

/** Every line a scan of `text` hands over, with where it is, read `chunk` bytes at a time. */
async function scan(text: string | Buffer, chunk: number) {
  const files = new FakeJournalFiles();
  files.put('log', text);
  const lines: { text: string; at: LineAt }[] = [];
  const end = await scanLines(
    files,
    'log',
    (line, at) => lines.push({ text: line.toString('utf8'), at }),
    chunk,
  );
  return { lines, end, reads: files.calls('readRanges') };
}

describe(scanLines.name, () => {
  it('reads a megabyte at a time by default', () => {
    expect(SCAN_CHUNK_BYTES).toBe(1_048_576);
  });

  it('hands over each line without its newline, with its offset and length', async () => {
    const { lines, end } = await scan('ab\ncde\n\nf\n', 1024);
    expect(lines).toEqual([
      { text: 'ab', at: { offset: 0, length: 2 } },
      { text: 'cde', at: { offset: 3, length: 3 } },
      { text: '', at: { offset: 7, length: 0 } },
      { text: 'f', at: { offset: 8, length: 1 } },
    ]);
    expect(end).toEqual({ size: 10, tornTail: false });
  });

  it.each([1, 2, 3, 4, 5, 7, 64])(
    'finds the same lines and offsets %i byte(s) at a time, across chunk boundaries',
    async (chunk) => {
      const text = 'first line\nsecond, a longer one\nx\n\nlast line\n';
      const { lines, end } = await scan(text, chunk);
      let offset = 0;
      const expected = text
        .slice(0, -1)
        .split('\n')
        .map((line) => {
          const at = { offset, length: line.length };
          offset += line.length + 1;
          return { text: line, at };
        });
      expect(lines).toEqual(expected);
      expect(end).toEqual({ size: text.length, tornTail: false });
    },
  );

  it('hands over a line torn by a crash (no newline) last, and says so', async () => {
    const { lines, end } = await scan('whole\ntor', 4);
    expect(lines).toEqual([
      { text: 'whole', at: { offset: 0, length: 5 } },
      { text: 'tor', at: { offset: 6, length: 3 } },
    ]);
    expect(end).toEqual({ size: 9, tornTail: true });
  });

  it('carries a line longer than many chunks until its newline', async () => {
    const long = 'y'.repeat(1000);
    const { lines } = await scan(`a\n${long}\nb\n`, 16);
    expect(lines.map(({ text, at }) => [text.length, at])).toEqual([
      [1, { offset: 0, length: 1 }],
      [1000, { offset: 2, length: 1000 }],
      [1, { offset: 1003, length: 1 }],
    ]);
  });

  it('counts bytes, not characters: offsets of lines after multi-byte text', async () => {
    const { lines } = await scan(Buffer.from('é😀\nz\n', 'utf8'), 3);
    expect(lines).toEqual([
      { text: 'é😀', at: { offset: 0, length: 6 } },
      { text: 'z', at: { offset: 7, length: 1 } },
    ]);
  });

  it('stops at the first short read: a file of exactly one chunk takes a second, empty read', async () => {
    expect((await scan('abc\n', 4)).reads).toBe(2);
    expect((await scan('abc\n', 5)).reads).toBe(1);
  });

  it('hands over nothing for an empty file', async () => {
    expect(await scan('', 8)).toEqual({ lines: [], end: { size: 0, tornTail: false }, reads: 1 });
  });

  it('rejects as the reads do', async () => {
    const files = new FakeJournalFiles();
    await expect(scanLines(files, 'missing', () => undefined)).rejects.toMatchObject({
      code: 'ENOENT',
    });
    files.put('log', 'a\nb\n');
    files.failNext('readRanges', fsError('EIO', 'read'));
    await expect(scanLines(files, 'log', () => undefined)).rejects.toMatchObject({ code: 'EIO' });
  });
});

describe(readLineAt.name, () => {
  const files = new FakeJournalFiles();
  files.put('log', `a\n${'y'.repeat(100)}\nlast`);

  it('reads 16 KiB at a time by default', () => {
    expect(LINE_READ_BYTES).toBe(16_384);
  });

  it('answers the line at an offset, without its newline', async () => {
    expect((await readLineAt(files, 'log', 0, 8)).toString()).toBe('a');
    expect((await readLineAt(files, 'log', 1, 8)).toString()).toBe('');
  });

  it('reads on past its chunk until the newline', async () => {
    const before = files.calls('readRanges');
    expect((await readLineAt(files, 'log', 2, 8)).toString()).toBe('y'.repeat(100));
    expect(files.calls('readRanges') - before).toBe(13);
  });

  it('answers a last line without a newline up to the end of the file', async () => {
    expect((await readLineAt(files, 'log', 103, 8)).toString()).toBe('last');
    expect((await readLineAt(files, 'log', 103, 4)).toString()).toBe('last');
  });

  it('rejects as the reads do', async () => {
    await expect(readLineAt(files, 'missing', 0)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
