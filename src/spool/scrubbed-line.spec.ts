import {
  decodeJournalLine,
  encodeJournalLine,
  encodeScrubbedLine,
  journaledIdOf,
} from './journal-codec.js';
import { readBack } from './journal-reader.js';
import { scanSegment } from './segment-scan.js';
import { recordOfEntry } from './set-aside-actions.js';
import { setAsideIdOf, valueOfLine } from './set-aside-entry.js';
import { scrubbedEntry, scrubbedEntryLine } from './set-aside-scrub.js';
import { FakeJournalFiles } from './testing/fake-journal-files.js';
import { messageRecord } from './testing/records.js';

// The scrubbed line of a redacted message, as every reader of the journal takes it.

const record = messageRecord('s', 1, { content: 'x'.repeat(200) });
const line = encodeJournalLine(record);
const scrubbed = encodeScrubbedLine(record.id, line.length) as Buffer;
/** Half a scrub, as a crash mid-write leaves it: the new head, the old rest. */
const torn = Buffer.concat([scrubbed.subarray(0, 60), line.subarray(60)]);

describe(encodeScrubbedLine.name, () => {
  it('is as long as the line it replaces, checksummed, and names the id only', () => {
    expect(scrubbed).toHaveLength(line.length);
    expect(JSON.parse(scrubbed.toString('utf8'))).toEqual({
      crc: expect.stringMatching(/^[0-9a-f]{8}$/),
      v: 1,
      scrubbed: record.id,
    });
    expect(decodeJournalLine(scrubbed.subarray(0, -1))).toEqual({
      kind: 'scrubbed',
      id: record.id,
    });
  });

  it('is null for a length too short to hold it', () => {
    expect(encodeScrubbedLine(record.id, 20)).toBeNull();
  });

  it('is told when torn, checksum or not, and never taken for a bad line', () => {
    expect(decodeJournalLine(torn.subarray(0, -1))).toEqual({ kind: 'scrubbed', id: record.id });
    expect(decodeJournalLine(torn.subarray(0, 38))).toEqual({ kind: 'scrubbed', id: null });
  });
});

describe(journaledIdOf.name, () => {
  it('finds the id of a record, a scrubbed line, and a line torn or flipped past it', () => {
    const flipped = Buffer.from(line);
    flipped[100] ^= 0x01;

    expect([line, scrubbed, torn, flipped, line.subarray(0, 45)].map(journaledIdOf)).toEqual([
      record.id,
      record.id,
      record.id,
      record.id,
      record.id,
    ]);
    expect(journaledIdOf(Buffer.from('{"at":1}'))).toBeNull();
  });
});

describe('readers of a scrubbed line', () => {
  const other = messageRecord('s', 2);
  const otherLine = encodeJournalLine(other);

  it('a segment scan takes it for neither a record nor a bad range, whole, torn or cut', () => {
    for (const data of [
      Buffer.concat([scrubbed, otherLine]),
      Buffer.concat([torn, otherLine]),
      Buffer.concat([otherLine, scrubbed.subarray(0, 70)]),
    ]) {
      const scan = scanSegment(data);
      expect(scan.records.map((found) => found.record)).toEqual([other]);
      expect(scan.bad).toEqual([]);
    }
  });

  it('reading back says scrubbed: owed no more, no bytes to set aside', async () => {
    const files = new FakeJournalFiles();
    files.put('segment', Buffer.concat([torn, otherLine]));
    const entries = [
      { location: { segment: 'segment', offset: 0, length: line.length }, record },
      {
        location: { segment: 'segment', offset: line.length, length: otherLine.length },
        record: other,
      },
    ].map(({ location, record: { id, sessionId, orderKey, acceptedAt } }) => ({
      id,
      sessionId,
      orderKey,
      acceptedAt,
      location,
    }));

    expect(await readBack(files, entries)).toEqual([
      { kind: 'scrubbed' },
      { kind: 'record', record: other },
    ]);
  });

  it('a re-drive of set-aside bytes that are a scrubbed line finds no record', () => {
    expect(recordOfEntry({ at: 1, reason: 'r', source: 'x', raw: scrubbed.toString() })).toEqual({
      kind: 'malformed',
      reason: 'it is the scrubbed line of a redacted message',
    });
  });
});

describe(scrubbedEntryLine.name, () => {
  const entry = { at: 1, reason: 'refused', source: 'seg', offset: 12, sessionId: 's', record };
  const original = JSON.stringify(entry);
  const id = setAsideIdOf(original);

  it('keeps the entry id, time and reason in a line of the same length', () => {
    const text = scrubbedEntryLine(scrubbedEntry(entry, id, record.id), original.length) as string;

    expect(Buffer.byteLength(text)).toBe(Buffer.byteLength(original));
    expect(setAsideIdOf(text)).toBe(id);
    expect(JSON.parse(text)).toEqual({
      scrubbed: id,
      at: 1,
      reason: 'refused',
      source: 'seg',
      offset: 12,
      sessionId: 's',
      messageId: record.id,
    });
  });

  it('drops the optional fields when the old line is short, then gives up', () => {
    const kept = scrubbedEntry(entry, id, record.id);
    const minimal = JSON.stringify({ scrubbed: id, at: 1, reason: 'refused', source: 'seg' });

    expect(JSON.parse(scrubbedEntryLine(kept, minimal.length) as string)).toEqual({
      scrubbed: id,
      at: 1,
      reason: 'refused',
      source: 'seg',
    });
    expect(scrubbedEntryLine(kept, minimal.length - 1)).toBeNull();
  });

  it('is read at its head when a crash tore its rewrite', () => {
    const text = scrubbedEntryLine(scrubbedEntry(entry, id, record.id), original.length) as string;
    const tornLine = text.slice(0, 140) + original.slice(140);

    expect(valueOfLine(tornLine)).toEqual(JSON.parse(text));
    expect(setAsideIdOf(tornLine)).toBe(id);
  });
});
