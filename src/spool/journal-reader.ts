import { type DecodedLine, decodeJournalLine } from './journal-codec.js';
import { type JournalFiles } from './journal-files.js';
import { type DiskEntry } from './journal-index.js';

// Ranges of one segment closer than this are read in one go.
const MERGE_GAP_BYTES = 64 * 1024;

/**
 * Reads the records of `entries` back from their segments, one read per run of nearby lines,
 * and checks each again (checksum, and that it is the record the index expects). Results are
 * in the order of `entries`; a line that no longer reads back says why.
 */
export async function readBack(
  files: JournalFiles,
  entries: readonly DiskEntry[],
): Promise<DecodedLine[]> {
  const results: DecodedLine[] = new Array<DecodedLine>(entries.length);
  const bySegment = new Map<string, number[]>();
  entries.forEach((entry, index) => {
    const indexes = bySegment.get(entry.location.segment) ?? [];
    indexes.push(index);
    bySegment.set(entry.location.segment, indexes);
  });
  for (const [segment, indexes] of bySegment) {
    indexes.sort((left, right) => entries[left].location.offset - entries[right].location.offset);
    const runs: { offset: number; length: number; members: number[] }[] = [];
    for (const index of indexes) {
      const { offset, length } = entries[index].location;
      const run = runs[runs.length - 1];
      if (run && offset - (run.offset + run.length) <= MERGE_GAP_BYTES) {
        run.length = Math.max(run.length, offset + length - run.offset);
        run.members.push(index);
      } else {
        runs.push({ offset, length, members: [index] });
      }
    }
    let buffers: Buffer[];
    try {
      buffers = await files.readRanges(segment, runs);
    } catch (error) {
      const reason = `segment unreadable: ${(error as Error).message}`;
      for (const index of indexes) results[index] = { kind: 'bad', reason };
      continue;
    }
    runs.forEach((run, runIndex) => {
      for (const index of run.members) {
        const { offset, length } = entries[index].location;
        const line = buffers[runIndex].subarray(offset - run.offset, offset - run.offset + length);
        results[index] = checkLine(line, length, entries[index]);
      }
    });
  }
  return results;
}

function checkLine(line: Buffer, length: number, entry: DiskEntry): DecodedLine {
  if (line.length !== length || line[length - 1] !== 0x0a) {
    return { kind: 'bad', reason: 'line cut short on disk' };
  }
  const decoded = decodeJournalLine(line.subarray(0, length - 1));
  if (decoded.kind === 'record' && decoded.record.id !== entry.id) {
    return { kind: 'bad', reason: `expected message ${entry.id}, found ${decoded.record.id}` };
  }
  return decoded;
}
