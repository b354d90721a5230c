import { crc32 } from 'node:zlib';
import { MessageRole } from '../message/message-role.js';
import { decodeJournalLine, encodeJournalLine, JOURNAL_FORMAT_VERSION } from './journal-codec.js';
import { messageRecord } from './testing/records.js';

/** A line without its newline, as the scanner hands it to decodeJournalLine. */
function lineOf(encoded: Buffer): Buffer {
  return encoded.subarray(0, encoded.length - 1);
}

/**
 * A line whose checksum is right for whatever `body` holds: to show what the decoder makes of
 * a well-checksummed line it must still refuse (another version, a field of the wrong type).
 */
function signed(body: string): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  const crc = crc32(bytes).toString(16).padStart(8, '0');
  return Buffer.concat([Buffer.from(`{"crc":"${crc}",`, 'latin1'), bytes]);
}

/** A good record's line, signed again after `change` edited its message. */
function withMessage(change: (message: Record<string, unknown>) => void): Buffer {
  const message = JSON.parse(JSON.stringify(messageRecord('s', 1))) as Record<string, unknown>;
  change(message);
  return signed(`"v":1,"message":${JSON.stringify(message)}}`);
}

function reasonOf(line: Buffer): string {
  const decoded = decodeJournalLine(line);
  return decoded.kind === 'bad' ? decoded.reason : 'decoded a record';
}

describe(encodeJournalLine.name, () => {
  it('writes one JSON line: a checksum of the rest of the line, the version, the message', () => {
    const record = messageRecord('session-1', 7);

    const encoded = encodeJournalLine(record);

    const text = encoded.toString('utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.indexOf('\n')).toBe(text.length - 1);
    expect(JSON.parse(text)).toEqual({
      crc: crc32(encoded.subarray(18, encoded.length - 1))
        .toString(16)
        .padStart(8, '0'),
      v: JOURNAL_FORMAT_VERSION,
      message: record,
    });
    expect(text).toMatch(/^\{"crc":"[0-9a-f]{8}","v":1,"message":\{"id":"session-1-7",/);
  });

  it('keeps the message fields in a fixed order, whatever order the record has them in', () => {
    const record = messageRecord('s', 1);
    const shuffled = Object.fromEntries(Object.entries(record).reverse()) as typeof record;

    expect(encodeJournalLine(shuffled)).toEqual(encodeJournalLine(record));
    expect(Object.keys(JSON.parse(encodeJournalLine(record).toString()).message)).toEqual([
      'id',
      'sessionId',
      'orderKey',
      'role',
      'content',
      'clientMessageId',
      'toolName',
      'toolCallId',
      'toolCalls',
      'metadata',
      'acceptedAt',
    ]);
  });

  it('writes a missing toolCalls or metadata as null', () => {
    const record = { ...messageRecord('s', 1), toolCalls: undefined, metadata: undefined };

    const decoded = decodeJournalLine(lineOf(encodeJournalLine(record)));

    expect(decoded).toEqual({
      kind: 'record',
      record: { ...record, toolCalls: null, metadata: null },
    });
  });

  it('keeps a newline or a line separator in the content inside the one line', () => {
    const record = messageRecord('s', 1, { content: 'one\ntwo\r\nthree\u2028four' });

    const encoded = encodeJournalLine(record);

    expect(encoded.indexOf(0x0a)).toBe(encoded.length - 1);
    expect(decodeJournalLine(lineOf(encoded))).toEqual({ kind: 'record', record });
  });

  it('writes a checksum with leading zeros as eight hex digits', () => {
    let sequence = 0;
    let encoded = encodeJournalLine(messageRecord('s', sequence));
    // Some record's checksum starts with a 0 digit; the first one found is always the same.
    while (!encoded.toString('latin1', 0, 9).endsWith('0')) {
      encoded = encodeJournalLine(messageRecord('s', ++sequence));
    }

    expect(encoded.toString('latin1', 0, 18)).toMatch(/^\{"crc":"0[0-9a-f]{7}",$/);
    expect(decodeJournalLine(lineOf(encoded))).toEqual({
      kind: 'record',
      record: messageRecord('s', sequence),
    });
  });
});

describe(decodeJournalLine.name, () => {
  describe('round trip', () => {
    it('reads back every field of a record', () => {
      const record = messageRecord('tenant.a:b_c-9', 3, {
        id: '0f3c52aa-4a7d-4c38-9a8e-3c1d2b7e5a90',
        role: MessageRole.TOOL,
        content: 'the tool said {"ok":true}',
        clientMessageId: 'client-42',
        toolName: 'search',
        toolCallId: 'call-1',
        toolCalls: [{ name: 'search', arguments: { q: 'weather', limit: 3 } }],
        metadata: { nested: { list: [1, 'two', null, true] }, number: 1.5 },
        acceptedAt: 1_764_460_800_123,
      });

      expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
        kind: 'record',
        record,
      });
    });

    it("reads back an imported message's own time, and writes none for another", () => {
      const imported = messageRecord('s', 1, { createdAt: 0 });
      const encoded = encodeJournalLine(imported);
      expect(decodeJournalLine(lineOf(encoded))).toEqual({ kind: 'record', record: imported });
      expect(JSON.parse(encoded.toString('utf8')).message.createdAt).toBe(0);

      for (const createdAt of [null, undefined]) {
        const accepted = messageRecord('s', 1, { createdAt });
        const line = encodeJournalLine(accepted).toString('utf8');
        expect(line).not.toContain('createdAt');
        expect(decodeJournalLine(lineOf(Buffer.from(line)))).toEqual({
          kind: 'record',
          record: messageRecord('s', 1),
        });
      }
      // A line of an earlier version's (no createdAt key) and one with a null reads as none.
      const decoded = decodeJournalLine(withMessage((m) => (m.createdAt = null)));
      expect(decoded).toEqual({ kind: 'record', record: messageRecord('s', 1) });
    });

    it.each(Object.values(MessageRole))('reads back the role %s', (role) => {
      const record = messageRecord('s', 1, { role });

      expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
        kind: 'record',
        record,
      });
    });

    it.each([
      ['unicode text', 'héllo wörld ✓ 日本語 😀 e\u0301'],
      ['empty content', ''],
      ['a lone high surrogate', 'before \ud83d after'],
      ['a lone low surrogate', '\ude00 at the start'],
      ['control characters', '\u0000\u0007\t"\\'],
    ])('reads back %s in the content', (_case, content) => {
      const record = messageRecord('s', 1, { content });

      expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
        kind: 'record',
        record,
      });
    });

    it('reads back lone surrogates and unicode inside JSON metadata and tool calls', () => {
      const record = messageRecord('s', 1, {
        metadata: { '\ud800key': 'value \udfff', emoji: '😀', list: ['\ud83d'] },
        toolCalls: [{ arguments: '\udbff' }],
      });

      const decoded = decodeJournalLine(lineOf(encodeJournalLine(record)));

      expect(decoded).toEqual({ kind: 'record', record });
      expect(decoded.kind === 'record' && decoded.record.metadata).toEqual({
        '\ud800key': 'value \udfff',
        emoji: '😀',
        list: ['\ud83d'],
      });
    });

    it.each([
      ['zero', 0],
      ['false', false],
      ['an empty string', ''],
      ['an empty object', {}],
    ])('keeps metadata and tool calls of %s as they are, not null', (_case, value) => {
      const record = messageRecord('s', 1, { metadata: value, toolCalls: value });

      expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
        kind: 'record',
        record,
      });
    });

    it.each([
      ['zero', 0],
      ['the largest safe integer', Number.MAX_SAFE_INTEGER],
    ])('accepts an acceptance time of %s', (_case, acceptedAt) => {
      const record = messageRecord('s', 1, { acceptedAt });

      expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
        kind: 'record',
        record,
      });
    });

    it('reads a line whose message lacks toolCalls and metadata as null ones', () => {
      const line = withMessage((message) => {
        delete message.toolCalls;
        delete message.metadata;
      });

      expect(decodeJournalLine(line)).toEqual({
        kind: 'record',
        record: messageRecord('s', 1),
      });
    });
  });

  describe('damaged lines', () => {
    const good = lineOf(encodeJournalLine(messageRecord('session-1', 1, { content: 'hé 😀' })));

    it('refuses the line when any one byte of it is flipped', () => {
      const reasons = new Set<string>();
      for (let position = 0; position < good.length; position++) {
        const flipped = Buffer.from(good);
        flipped[position] ^= 0x01;

        const decoded = decodeJournalLine(flipped);

        expect(decoded.kind).toBe('bad');
        if (position >= 18) {
          expect(decoded).toEqual({
            kind: 'bad',
            reason: 'checksum mismatch (torn or corrupted line)',
          });
        }
        if (decoded.kind === 'bad') reasons.add(decoded.reason);
      }
      expect([...reasons].sort()).toEqual([
        'checksum mismatch (torn or corrupted line)',
        'not a journal record (no checksum prefix)',
      ]);
    });

    it('refuses every torn prefix of the line', () => {
      for (let length = 0; length < good.length; length++) {
        expect(decodeJournalLine(good.subarray(0, length)).kind).toBe('bad');
      }
    });

    it.each([
      ['an empty line', ''],
      ['plain text', 'hello'],
      ['JSON without a checksum', '{"v":1,"message":{}}'],
      ['a checksum in capitals', '{"crc":"1C291CA3","v":1}'],
      ['a checksum of seven digits', '{"crc":"1c291ca","v":1}'],
      ['a checksum not first', ' {"crc":"1c291ca3","v":1}'],
    ])('refuses %s as not a journal record', (_case, text) => {
      expect(decodeJournalLine(Buffer.from(text))).toEqual({
        kind: 'bad',
        reason: 'not a journal record (no checksum prefix)',
      });
    });

    it('refuses a line whose checksum matches but that is not JSON', () => {
      expect(reasonOf(signed('"v":1,"message":{'))).toBe(
        'checksum matches but the line is not JSON',
      );
    });

    it.each([
      ['a newer version', '2', 'unknown format version 2'],
      ['version 0', '0', 'unknown format version 0'],
      ['the version as a string', '"1"', 'unknown format version "1"'],
      ['a null version', 'null', 'unknown format version null'],
    ])('refuses %s', (_case, version, reason) => {
      const message = JSON.stringify(messageRecord('s', 1));

      expect(reasonOf(signed(`"v":${version},"message":${message}}`))).toBe(reason);
    });

    it('refuses a line without a version', () => {
      const message = JSON.stringify(messageRecord('s', 1));

      expect(reasonOf(signed(`"message":${message}}`))).toBe('unknown format version undefined');
    });
  });

  describe('bad message fields', () => {
    it.each([
      ['a null message', 'null', 'message is not an object'],
      ['an array', '[]', 'message is not an object'],
      ['a string', '"hello"', 'message is not an object'],
      ['a number', '42', 'message is not an object'],
    ])('refuses %s', (_case, message, reason) => {
      expect(reasonOf(signed(`"v":1,"message":${message}}`))).toBe(`bad message: ${reason}`);
    });

    it('refuses a line without a message', () => {
      expect(reasonOf(signed('"v":1}'))).toBe('bad message: message is not an object');
    });

    it.each<[string, (message: Record<string, unknown>) => void, string]>([
      ['a missing sessionId', (m) => delete m.sessionId, 'sessionId is not a string'],
      ['a numeric sessionId', (m) => (m.sessionId = 5), 'sessionId is not a string'],
      ['an empty sessionId', (m) => (m.sessionId = ''), 'sessionId is not a session id'],
      ['a sessionId with a space', (m) => (m.sessionId = 'a b'), 'sessionId is not a session id'],
      [
        'a sessionId of 129 characters',
        (m) => (m.sessionId = 'x'.repeat(129)),
        'sessionId is not a session id',
      ],
      ['a missing orderKey', (m) => delete m.orderKey, 'orderKey is not a string'],
      [
        'an orderKey that is no key',
        (m) => (m.orderKey = '12.3.a'),
        'orderKey is not an order key',
      ],
      ['a missing role', (m) => delete m.role, 'role is not a string'],
      [
        'an unknown role',
        (m) => (m.role = 'ROBOT'),
        'role is not one of USER, ASSISTANT, SYSTEM, TOOL',
      ],
      [
        'a role in lower case',
        (m) => (m.role = 'user'),
        'role is not one of USER, ASSISTANT, SYSTEM, TOOL',
      ],
      ['a missing acceptedAt', (m) => delete m.acceptedAt, 'acceptedAt is not a time'],
      ['acceptedAt as a string', (m) => (m.acceptedAt = '5'), 'acceptedAt is not a time'],
      ['a fractional acceptedAt', (m) => (m.acceptedAt = 1.5), 'acceptedAt is not a time'],
      ['a negative acceptedAt', (m) => (m.acceptedAt = -1), 'acceptedAt is not a time'],
      ['an unsafe acceptedAt', (m) => (m.acceptedAt = 2 ** 53), 'acceptedAt is not a time'],
      ['a missing id', (m) => delete m.id, 'id is not a string'],
      ['a numeric id', (m) => (m.id = 7), 'id is not a string'],
      ['an empty id', (m) => (m.id = ''), 'id is empty'],
      ['a missing content', (m) => delete m.content, 'content is not a string'],
      ['a null content', (m) => (m.content = null), 'content is not a string'],
      [
        'a missing clientMessageId',
        (m) => delete m.clientMessageId,
        'clientMessageId is not a string or null',
      ],
      [
        'a numeric clientMessageId',
        (m) => (m.clientMessageId = 1),
        'clientMessageId is not a string or null',
      ],
      ['a missing toolName', (m) => delete m.toolName, 'toolName is not a string or null'],
      ['a toolName of false', (m) => (m.toolName = false), 'toolName is not a string or null'],
      ['a missing toolCallId', (m) => delete m.toolCallId, 'toolCallId is not a string or null'],
      ['a toolCallId object', (m) => (m.toolCallId = {}), 'toolCallId is not a string or null'],
      ['createdAt as a string', (m) => (m.createdAt = '5'), 'createdAt is not a time'],
      ['a negative createdAt', (m) => (m.createdAt = -1), 'createdAt is not a time'],
      ['a fractional createdAt', (m) => (m.createdAt = 0.5), 'createdAt is not a time'],
    ])('refuses %s', (_case, change, reason) => {
      expect(reasonOf(withMessage(change))).toBe(`bad message: ${reason}`);
    });

    it('reads string values of the nullable fields', () => {
      const line = withMessage((message) => {
        message.clientMessageId = '';
        message.toolName = 't';
        message.toolCallId = 'c';
      });

      expect(decodeJournalLine(line)).toEqual({
        kind: 'record',
        record: messageRecord('s', 1, { clientMessageId: '', toolName: 't', toolCallId: 'c' }),
      });
    });
  });
});

describe("an imported message's edits and redaction", () => {
  const edited = messageRecord('s', 1, {
    createdAt: 5,
    revision: 2,
    editedAt: 10,
    redactedAt: null,
    redactionReason: null,
  });
  const redacted = messageRecord('s', 2, {
    content: '',
    createdAt: 5,
    revision: 4,
    editedAt: 10,
    redactedAt: 0,
    redactionReason: 'spam',
  });

  it('writes them after its own time, all four, once it has a revision', () => {
    const message = JSON.parse(encodeJournalLine(redacted).toString('utf8')).message;

    expect(Object.keys(message).slice(-5)).toEqual([
      'createdAt',
      'revision',
      'editedAt',
      'redactedAt',
      'redactionReason',
    ]);
    expect(message).toMatchObject({
      revision: 4,
      editedAt: 10,
      redactedAt: 0,
      redactionReason: 'spam',
    });
  });

  it.each([
    ['an edited message', edited],
    ['a redacted one', redacted],
    [
      'one at revision 1',
      messageRecord('s', 3, {
        revision: 1,
        editedAt: null,
        redactedAt: null,
        redactionReason: null,
      }),
    ],
  ])('reads them back, of %s', (_case, record) => {
    expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toStrictEqual({
      kind: 'record',
      record,
    });
  });

  it('writes the times and reason it lacks as null, and reads them back so', () => {
    const record = messageRecord('s', 1, { revision: 2, editedAt: 7 });

    const line = encodeJournalLine(record);

    expect(JSON.parse(line.toString('utf8')).message).toMatchObject({
      revision: 2,
      editedAt: 7,
      redactedAt: null,
      redactionReason: null,
    });
    expect(decodeJournalLine(lineOf(line))).toStrictEqual({
      kind: 'record',
      record: { ...record, redactedAt: null, redactionReason: null },
    });
  });

  it('writes none of them for a message without a revision, and reads none back', () => {
    const record = messageRecord('s', 1, { editedAt: 7, redactedAt: 8, redactionReason: 'x' });

    const line = encodeJournalLine(record).toString('utf8');

    for (const key of ['revision', 'editedAt', 'redactedAt', 'redactionReason']) {
      expect(line).not.toContain(key);
    }
    const decoded = decodeJournalLine(lineOf(Buffer.from(line)));
    expect(decoded).toStrictEqual({ kind: 'record', record: messageRecord('s', 1) });
  });

  it('reads a line of a revision whose times are left out as null ones', () => {
    const line = withMessage((m) => {
      m.revision = 2;
      m.redactionReason = null;
    });

    expect(decodeJournalLine(line)).toStrictEqual({
      kind: 'record',
      record: {
        ...messageRecord('s', 1),
        revision: 2,
        editedAt: null,
        redactedAt: null,
        redactionReason: null,
      },
    });
  });

  it('takes the largest safe revision and times', () => {
    const record = messageRecord('s', 1, {
      revision: Number.MAX_SAFE_INTEGER,
      editedAt: Number.MAX_SAFE_INTEGER,
      redactedAt: Number.MAX_SAFE_INTEGER,
      redactionReason: '',
    });

    expect(decodeJournalLine(lineOf(encodeJournalLine(record)))).toEqual({
      kind: 'record',
      record,
    });
  });

  const withChanges =
    (change: (m: Record<string, unknown>) => void) => (m: Record<string, unknown>) => {
      Object.assign(m, { revision: 2, editedAt: 1, redactedAt: null, redactionReason: null });
      change(m);
    };

  it.each<[string, (m: Record<string, unknown>) => void, string]>([
    ['a revision of 0', (m) => (m.revision = 0), 'revision is not a revision'],
    ['a negative revision', (m) => (m.revision = -1), 'revision is not a revision'],
    ['a fractional revision', (m) => (m.revision = 1.5), 'revision is not a revision'],
    ['an unsafe revision', (m) => (m.revision = 2 ** 53), 'revision is not a revision'],
    ['a revision as a string', (m) => (m.revision = '2'), 'revision is not a revision'],
    ['a null revision', (m) => (m.revision = null), 'revision is not a revision'],
    ['editedAt as a string', (m) => (m.editedAt = '1'), 'not a change time'],
    ['a negative editedAt', (m) => (m.editedAt = -1), 'not a change time'],
    ['a fractional redactedAt', (m) => (m.redactedAt = 0.5), 'not a change time'],
    ['a good editedAt and a bad redactedAt', (m) => (m.redactedAt = '2'), 'not a change time'],
    [
      'a bad editedAt and no redactedAt',
      (m) => {
        m.editedAt = true;
        delete m.redactedAt;
      },
      'not a change time',
    ],
    [
      'a missing redactionReason',
      (m) => delete m.redactionReason,
      'redactionReason is not a string or null',
    ],
    [
      'a numeric redactionReason',
      (m) => (m.redactionReason = 1),
      'redactionReason is not a string or null',
    ],
  ])('refuses %s', (_case, change, reason) => {
    expect(reasonOf(withMessage(withChanges(change)))).toBe(`bad message: ${reason}`);
  });
});
