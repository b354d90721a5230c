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
  // The start of a line whose newline has not come yet, and where it begins in the file.
  let carry: Buffer = Buffer.alloc(0);
  let carryOffset = 0;
  for (;;) {
    const [chunk] = await files.readRanges(name, [{ offset: position, length: chunkBytes }]);
    position += chunk.length;
    const data = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
    let start = 0;
    for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a, start)) {
      onLine(data.subarray(start, end), { offset: carryOffset + start, length: end - start });
      start = end + 1;
    }
    carry = data.subarray(start);
    carryOffset += start;
    if (chunk.length < chunkBytes) break;
  }
  if (carry.length > 0) onLine(carry, { offset: carryOffset, length: carry.length });
  return { size: position, tornTail: carry.length > 0 };
}
