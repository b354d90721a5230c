import { type JournalFiles } from './journal-files.js';

/** Bytes read at a time: the memory a scan takes, whatever the size of the file. */
export const SCAN_CHUNK_BYTES = 1 << 20;

/** Where a line is in its file: its bytes, without the newline that ends it. */
export interface LineAt {
  offset: number;
  length: number;
}

/** What a scan found at the end of the file. */
export interface ScanEnd {
  /** The file's size. */
  size: number;
  /**
   * The last line had no newline (a write torn by a crash): it was handed to `onLine` as it
   * is, and the next line written must begin on a line of its own.
   */
  tornTail: boolean;
}

/**
 * Reads `name` from start to end, `chunkBytes` at a time, and hands each line (newline
 * excluded) to `onLine` with where it is. Why not read the file whole: a log that grew to
 * hundreds of MiB would take as much memory again at every start (764 MiB RSS for a 600 MiB
 * set-aside log), and past 2 GiB could not be read at all. A line longer than a chunk is
 * carried over until its newline comes. Rejects as the file's reads do (ENOENT when none).
 */
export async function scanLines(
  files: Pick<JournalFiles, 'readRanges'>,
  name: string,
  onLine: (line: Buffer, at: LineAt) => void,
  chunkBytes = SCAN_CHUNK_BYTES,
): Promise<ScanEnd> {
  let position = 0;
  // The pieces of a line whose newline has not come yet (joined once it does: joining at
  // every chunk would copy a long line over and over), and where that line begins.
  let pieces: Buffer[] = [];
  let lineOffset = 0;
  const joined = (last: Buffer) => (pieces.length === 0 ? last : Buffer.concat([...pieces, last]));
  for (;;) {
    const [chunk] = await files.readRanges(name, [{ offset: position, length: chunkBytes }]);
    position += chunk.length;
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      const line = joined(chunk.subarray(start, end));
      onLine(line, { offset: lineOffset, length: line.length });
      lineOffset += line.length + 1;
      pieces = [];
      start = end + 1;
    }
    if (start < chunk.length) pieces.push(chunk.subarray(start));
    if (chunk.length < chunkBytes) break;
  }
  if (pieces.length === 0) return { size: position, tornTail: false };
  const torn = joined(Buffer.alloc(0));
  onLine(torn, { offset: lineOffset, length: torn.length });
  return { size: position, tornTail: true };
}

/** Bytes read at a time by readLineAt: most lines are shorter. */
export const LINE_READ_BYTES = 16 * 1024;

/**
 * The line that begins at `offset` in `name`, without its newline (up to the end of the file
 * when it has none). Rejects as the file's reads do.
 */
export async function readLineAt(
  files: Pick<JournalFiles, 'readRanges'>,
  name: string,
  offset: number,
  chunkBytes = LINE_READ_BYTES,
): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for (let position = offset; ;) {
    const [chunk] = await files.readRanges(name, [{ offset: position, length: chunkBytes }]);
    const end = chunk.indexOf(0x0a);
    pieces.push(end === -1 ? chunk : chunk.subarray(0, end));
    if (end !== -1 || chunk.length < chunkBytes) break;
    position += chunk.length;
  }
  return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
}
