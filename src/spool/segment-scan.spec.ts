import { encodeJournalLine } from './journal-codec.js';
import { scanSegment } from './segment-scan.js';
import { messageRecord } from './testing/records.js';

const [first, second, third] = [1, 2, 3].map((sequence) => messageRecord('s', sequence));
const [line1, line2, line3] = [first, second, third].map(encodeJournalLine);

describe(scanSegment.name, () => {
  it('reads every record, with the offset and length of its line', () => {
    const scan = scanSegment(Buffer.concat([line1, line2, line3]));

    expect(scan).toEqual({
      records: [
        { record: first, offset: 0, length: line1.length },
        { record: second, offset: line1.length, length: line2.length },
        { record: third, offset: line1.length + line2.length, length: line3.length },
      ],
      bad: [],
    });
  });

  it('finds nothing in an empty segment', () => {
    expect(scanSegment(Buffer.alloc(0))).toEqual({ records: [], bad: [] });
  });

  it('sets aside a torn tail, keeping the records before it', () => {
    const torn = line2.subarray(0, 25);

    const scan = scanSegment(Buffer.concat([line1, torn]));

    expect(scan.records).toEqual([{ record: first, offset: 0, length: line1.length }]);
    expect(scan.bad).toEqual([
      { offset: line1.length, length: 25, reason: 'torn tail (no newline)' },
    ]);
  });

  it('takes a whole record without its newline for a torn tail too', () => {
    const scan = scanSegment(Buffer.concat([line1, line2.subarray(0, line2.length - 1)]));

    expect(scan.records.map((one) => one.record)).toEqual([first]);
    expect(scan.bad).toEqual([
      { offset: line1.length, length: line2.length - 1, reason: 'torn tail (no newline)' },
    ]);
  });

  it('skips empty lines, counting their bytes in the offsets', () => {
    const scan = scanSegment(Buffer.concat([Buffer.from('\n'), line1, Buffer.from('\n\n'), line2]));

    expect(scan).toEqual({
      records: [
        { record: first, offset: 1, length: line1.length },
        { record: second, offset: 1 + line1.length + 2, length: line2.length },
      ],
      bad: [],
    });
  });

  it('finds nothing but empty lines in a segment of newlines', () => {
    expect(scanSegment(Buffer.from('\n\n\n'))).toEqual({ records: [], bad: [] });
  });

  it('sets aside each bad line between good ones, and reads on past it', () => {
    const flipped = Buffer.from(line2);
    flipped[40] ^= 0x01;
    const garbage = Buffer.from('not a record\n');

    const scan = scanSegment(Buffer.concat([line1, flipped, garbage, line3]));

    expect(scan.records.map(({ record, offset }) => ({ id: record.id, offset }))).toEqual([
      { id: first.id, offset: 0 },
      { id: third.id, offset: line1.length + line2.length + garbage.length },
    ]);
    expect(scan.bad).toEqual([
      {
        offset: line1.length,
        length: line2.length,
        reason: 'checksum mismatch (torn or corrupted line)',
      },
      {
        offset: line1.length + line2.length,
        length: garbage.length,
        reason: 'not a journal record (no checksum prefix)',
      },
    ]);
  });
});
