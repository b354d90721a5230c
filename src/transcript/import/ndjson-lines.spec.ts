import { ScribeException } from '../../common/errors/scribe.exception.js';
import { ndjsonLines, type NumberedLine } from './ndjson-lines.js';

async function* chunks(...parts: (string | Buffer)[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
}

async function all(source: AsyncIterable<Buffer>, max = 100): Promise<NumberedLine[]> {
  const lines: NumberedLine[] = [];
  for await (const line of ndjsonLines(source, max)) lines.push(line);
  return lines;
}

async function refusal(source: AsyncIterable<Buffer>, max = 100): Promise<ScribeException> {
  try {
    await all(source, max);
  } catch (error) {
    return error as ScribeException;
  }
  throw new Error('not refused');
}

describe('ndjsonLines', () => {
  it('numbers lines from 1, across chunk boundaries, with or without a final newline', async () => {
    expect(await all(chunks('{"a":1}\n{"b"', ':2}\n', '{"c":3}'))).toEqual([
      { text: '{"a":1}', line: 1 },
      { text: '{"b":2}', line: 2 },
      { text: '{"c":3}', line: 3 },
    ]);
  });

  it('drops a CR before the newline, skips blank lines but counts them', async () => {
    expect(await all(chunks('a\r\n\r\n\nb\r', '\nc\r'))).toEqual([
      { text: 'a', line: 1 },
      { text: 'b', line: 4 },
      { text: 'c', line: 5 },
    ]);
  });

  it('keeps a CR inside a line, and a character split over chunks', async () => {
    const smile = Buffer.from('😀', 'utf8');
    expect(await all(chunks('x\ry', smile.subarray(0, 2), smile.subarray(2), '\n'))).toEqual([
      { text: 'x\ry😀', line: 1 },
    ]);
  });

  it('keeps a byte-order mark as text, on any line', async () => {
    expect(await all(chunks('\ufeff{}\n{}\n\ufeff{}'))).toEqual([
      { text: '\ufeff{}', line: 1 },
      { text: '{}', line: 2 },
      { text: '\ufeff{}', line: 3 },
    ]);
  });

  it('yields nothing for an empty body or newlines alone', async () => {
    expect(await all(chunks())).toEqual([]);
    expect(await all(chunks('\n\n'))).toEqual([]);
  });

  it('takes a line of exactly the bound, with its CR, in pieces', async () => {
    expect(await all(chunks('x'.repeat(5), 'y'.repeat(5), '\r\n'), 10)).toEqual([
      { text: 'xxxxxyyyyy', line: 1 },
    ]);
  });

  it('refuses a line over the bound as soon as it passes it, naming the line', async () => {
    let sent = 0;
    async function* endless(): AsyncGenerator<Buffer> {
      yield Buffer.from('ok\n');
      for (;;) {
        sent += 1;
        yield Buffer.from('x'.repeat(4));
      }
    }
    const error = await refusal(endless(), 10);
    expect(error).toBeInstanceOf(ScribeException);
    expect(error.field).toBe('line 2');
    expect(error.message).toBe(
      'line 2: is longer than 10 bytes, more than any message Scribe takes (MAX_MESSAGE_BYTES)',
    );
    expect(sent).toBe(3);
  });

  it('refuses a whole line over the bound within one chunk', async () => {
    expect((await refusal(chunks('a\nbbbbbbbbbbbb\n'), 10)).field).toBe('line 2');
    expect((await refusal(chunks('a\nbbbbbbbbbbb\r\n'), 10)).field).toBe('line 2');
    expect(await all(chunks('a\nbbbbbbbbbb\r\n'), 10)).toHaveLength(2);
  });

  it('refuses a last line over the bound without a newline', async () => {
    expect((await refusal(chunks('bbbbbb', 'bbbbbb'), 10)).field).toBe('line 1');
  });

  it('refuses bytes that are not UTF-8, naming the line', async () => {
    const error = await refusal(chunks('fine\n', Buffer.from([0x61, 0xc3, 0x28]), '\n'));
    expect(error.message).toBe('line 2: is not UTF-8');
    // A character cut short at the very end of the body, too.
    expect((await refusal(chunks(Buffer.from([0xf0, 0x9f, 0x98])))).message).toBe(
      'line 1: is not UTF-8',
    );
  });
});
