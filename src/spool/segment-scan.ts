import { type MessageRecord } from '../message/message-record.js';
import { decodeJournalLine, isScrubbedHead } from './journal-codec.js';

export interface ScannedRecord {
  record: MessageRecord;
  offset: number;
  /** Bytes of the line, its newline included. */
  length: number;
}

export interface BadRange {
  offset: number;
  length: number;
  reason: string;
}

export interface SegmentScan {
  records: ScannedRecord[];
  bad: BadRange[];
}

/**
 * Reads every line of a segment: the good records, and the ranges that cannot be used (a
 * torn tail, a flipped byte, an unknown version), so that one bad line never hides the others.
 * A redacted message's scrubbed line (whole or torn) is neither: nothing is owed for it, and
 * none of its bytes may be kept.
 */
export function scanSegment(data: Buffer): SegmentScan {
  const records: ScannedRecord[] = [];
  const bad: BadRange[] = [];
  let offset = 0;
  while (offset < data.length) {
    const newline = data.indexOf(0x0a, offset);
    if (newline < 0) {
      if (isScrubbedHead(data.subarray(offset))) break;
      // Only the last write can stop short of its newline: a crash in the middle of it.
      bad.push({ offset, length: data.length - offset, reason: 'torn tail (no newline)' });
      break;
    }
    const line = data.subarray(offset, newline);
    const length = newline + 1 - offset;
    if (line.length > 0) {
      const decoded = decodeJournalLine(line);
      if (decoded.kind === 'record') records.push({ record: decoded.record, offset, length });
      else if (decoded.kind === 'bad') bad.push({ offset, length, reason: decoded.reason });
    }
    offset = newline + 1;
  }
  return { records, bad };
}
