import { ScribeException } from '../../common/errors/scribe.exception.js';
import { parseImportLine } from './import-lines.js';

const SESSION = {
  id: 's-1',
  title: 'Trip',
  metadata: { owner: 'u1' },
  createdAt: '2024-01-02T03:04:05.678Z',
  updatedAt: '2024-01-02T03:04:06.000Z',
  messageCount: 2,
  revision: 3,
};
const MESSAGE = {
  id: '0190a5b4-7c1e-7d2a-9b3c-4d5e6f708192',
  sessionId: 's-1',
  status: 'QUEUED',
  role: 'TOOL',
  content: 'found it',
  clientMessageId: 'c-1',
  toolName: 'search',
  toolCallId: 'call-1',
  toolCalls: [{ q: 1 }],
  metadata: { a: [1] },
  createdAt: '2024-01-02T03:04:05.678Z',
};

const head = (fields: Record<string, unknown> = {}) =>
  parseImportLine(JSON.stringify({ session: { ...SESSION, ...fields } }), 1, 's-1', 100, true);
const line = (fields: Record<string, unknown> = {}, text?: string) =>
  parseImportLine(
    text ?? JSON.stringify({ message: { ...MESSAGE, ...fields } }),
    7,
    's-1',
    100,
    false,
  );

function refused(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(ScribeException);
    return (error as ScribeException).message;
  }
  throw new Error('not refused');
}

describe('parseImportLine', () => {
  it('reads the session line: its fields, times as epoch ms', () => {
    expect(head()).toEqual({
      kind: 'session',
      session: {
        title: 'Trip',
        metadata: { owner: 'u1' },
        createdAt: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
        updatedAt: Date.UTC(2024, 0, 2, 3, 4, 6),
        revision: 3,
      },
    });
    expect(head({ title: null, metadata: null })).toMatchObject({
      session: { title: null, metadata: null },
    });
    expect(head({ title: undefined, metadata: undefined })).toMatchObject({
      session: { title: null, metadata: null },
    });
  });

  it('reads a message line: every field an export writes, the status and session left out', () => {
    expect(line()).toEqual({
      kind: 'message',
      message: {
        id: MESSAGE.id,
        role: 'TOOL',
        content: 'found it',
        clientMessageId: 'c-1',
        toolName: 'search',
        toolCallId: 'call-1',
        toolCalls: [{ q: 1 }],
        metadata: { a: [1] },
        createdAt: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
      },
    });
  });

  it("reads an edited message's changes into the message imported", () => {
    expect(
      line({
        revision: 2,
        editedAt: '2024-01-02T03:04:06.000Z',
        redacted: false,
        redactedAt: null,
        redactionReason: null,
      }),
    ).toEqual({
      kind: 'message',
      message: {
        id: MESSAGE.id,
        role: 'TOOL',
        content: 'found it',
        clientMessageId: 'c-1',
        toolName: 'search',
        toolCallId: 'call-1',
        toolCalls: [{ q: 1 }],
        metadata: { a: [1] },
        createdAt: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
        revision: 2,
        editedAt: Date.UTC(2024, 0, 2, 3, 4, 6),
        redactedAt: null,
        redactionReason: null,
      },
    });
  });

  it("reads a redacted message's tombstone, checked against the message's own time", () => {
    const tombstone = {
      content: '',
      toolCalls: null,
      metadata: null,
      revision: 3,
      editedAt: null,
      redacted: true,
      redactedAt: '2024-01-02T03:04:07.000Z',
      redactionReason: 'spam',
    };
    expect(line(tombstone)).toMatchObject({
      message: {
        content: '',
        revision: 3,
        editedAt: null,
        redactedAt: Date.UTC(2024, 0, 2, 3, 4, 7),
        redactionReason: 'spam',
      },
    });
    expect(refused(() => line({ ...tombstone, redactedAt: '2024-01-02T03:04:05.677Z' }))).toBe(
      'line 7.message.redactedAt: is before createdAt',
    );
    expect(refused(() => line({ ...tombstone, content: 'found it' }))).toBe(
      'line 7.message.content: must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    );
  });

  it('reads a message never changed with none of the change fields', () => {
    const parsed = line({ revision: 1, editedAt: null, redacted: false });
    expect(parsed.kind === 'message' && Object.keys(parsed.message)).not.toContain('revision');
    expect(parsed).toEqual(line());
  });

  it('takes the optional fields absent or null, and times with an offset or fewer digits', () => {
    const minimal = {
      id: MESSAGE.id,
      role: 'USER',
      content: '',
      createdAt: '1970-01-01T00:00:00Z',
    };
    expect(line({}, JSON.stringify({ message: minimal }))).toEqual({
      kind: 'message',
      message: {
        ...minimal,
        createdAt: 0,
        clientMessageId: null,
        toolName: null,
        toolCallId: null,
        toolCalls: null,
        metadata: null,
      },
    });
    expect(line({ createdAt: '2024-01-02T04:04:05.6+01:00' })).toMatchObject({
      message: { createdAt: Date.UTC(2024, 0, 2, 3, 4, 5, 600) },
    });
    expect(line({ status: 'PERSISTED', sessionId: undefined })).toMatchObject({ kind: 'message' });
  });

  it.each<[string, () => unknown, string]>([
    ['not JSON', () => line({}, '{"message":'), 'line 7: is not JSON'],
    ['a string', () => line({}, '"x"'), 'line 7: must be a JSON object'],
    ['null', () => line({}, 'null'), 'line 7: must be a JSON object'],
    ['an array', () => line({}, '[]'), 'line 7: must be a JSON object'],
    [
      'a session line after the first',
      () => line({}, JSON.stringify({ session: SESSION })),
      'line 7: must be {"message":{…}}, one message as its export wrote it',
    ],
    [
      'a message line first',
      () => parseImportLine(JSON.stringify({ message: MESSAGE }), 1, 's-1', 100, true),
      'line 1: must be {"session":{…}}, the session as its export wrote it',
    ],
    [
      'two keys',
      () => line({}, JSON.stringify({ message: MESSAGE, more: 1 })),
      'line 7: must be {"message":{…}}, one message as its export wrote it',
    ],
    [
      'no key',
      () => line({}, '{}'),
      'line 7: must be {"message":{…}}, one message as its export wrote it',
    ],
    [
      'a message that is an array',
      () => line({}, '{"message":[]}'),
      'line 7.message: must be a JSON object',
    ],
    [
      'a stray key',
      () => line({ revisions: 1 }),
      'line 7.message.revisions: property revisions should not exist',
    ],
    ['no id', () => line({ id: undefined }), 'line 7.message.id: is required'],
    ['no role', () => line({ role: undefined }), 'line 7.message.role: is required'],
    ['no content', () => line({ content: undefined }), 'line 7.message.content: is required'],
    ['no createdAt', () => line({ createdAt: undefined }), 'line 7.message.createdAt: is required'],
    [
      'another session',
      () => line({ sessionId: 's-2' }),
      'line 7.message.sessionId: must be the session imported into ("s-1"), or absent',
    ],
    [
      'a null session',
      () => line({ sessionId: null }),
      'line 7.message.sessionId: must be the session imported into ("s-1"), or absent',
    ],
    [
      'an unknown status',
      () => line({ status: 'persisted' }),
      'line 7.message.status: must be one of PERSISTED, QUEUED, BUFFERED',
    ],
    [
      'an unknown role',
      () => line({ role: 'user' }),
      'line 7.message.role: must be one of USER, ASSISTANT, SYSTEM, TOOL',
    ],
    ['an id that is a number', () => line({ id: 1 }), 'line 7.message.id: must be a string'],
    [
      'content that is an object',
      () => line({ content: { a: 1 } }),
      'line 7.message.content: must be a string',
    ],
    [
      'a client id that is a number',
      () => line({ clientMessageId: 5 }),
      'line 7.message.clientMessageId: must be a string',
    ],
    [
      'a NUL in a tool name',
      () => line({ toolName: 'a\u0000' }),
      'line 7.message.toolName: must not contain the NUL character (U+0000)',
    ],
    [
      'a date alone',
      () => line({ createdAt: '2024-01-02' }),
      'line 7.message.createdAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'a time without a zone',
      () => line({ createdAt: '2024-01-02T03:04:05' }),
      'line 7.message.createdAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'a time as a number',
      () => line({ createdAt: 1700000000000 }),
      'line 7.message.createdAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'a day that does not exist',
      () => line({ createdAt: '2024-13-40T03:04:05Z' }),
      'line 7.message.createdAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'a time before 1970',
      () => line({ createdAt: '1969-12-31T23:59:59.999Z' }),
      'line 7.message.createdAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'a session of another id',
      () => head({ id: 's-2' }),
      'line 1.session.id: must be the session imported into ("s-1"): an export imports into the session it came from',
    ],
    [
      'a session with a stray key',
      () => head({ owner: 'x' }),
      'line 1.session.owner: property owner should not exist',
    ],
    [
      'a title too long',
      () => head({ title: 'x'.repeat(513) }),
      'line 1.session.title: must be 1 to 512 characters long',
    ],
    [
      'a title that is a number',
      () => head({ title: 3 }),
      'line 1.session.title: must be a string',
    ],
    [
      'metadata too deep',
      () => head({ metadata: JSON.parse('['.repeat(21) + ']'.repeat(21)) }),
      'line 1.session.metadata: is nested more than 20 levels deep',
    ],
    [
      'metadata over the message bound',
      () => head({ metadata: 'x'.repeat(99) }),
      'line 1.session.metadata: is 101 bytes; the limit is 100 bytes (MAX_MESSAGE_BYTES)',
    ],
    [
      'a revision below 0',
      () => head({ revision: -1 }),
      'line 1.session.revision: must be a whole number, 0 or more',
    ],
    [
      'a revision that is a fraction',
      () => head({ revision: 1.5 }),
      'line 1.session.revision: must be a whole number, 0 or more',
    ],
    [
      'a count that is text',
      () => head({ messageCount: '2' }),
      'line 1.session.messageCount: must be a whole number, 0 or more',
    ],
    [
      'an updatedAt that is no time',
      () => head({ updatedAt: 'soon' }),
      'line 1.session.updatedAt: must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
  ])('refuses %s, naming the line and field', (_case, parse, said) => {
    expect(refused(parse)).toBe(said);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a revision past the bound',
      { revision: 1_000_000_001 },
      'line 1.session.revision: must be at most 1000000000',
    ],
    [
      'an updatedAt in the future',
      { updatedAt: '9999-12-31T23:59:59.999Z' },
      'line 1.session.updatedAt: is in the future',
    ],
    [
      'a createdAt in the future',
      { createdAt: '9999-12-31T23:59:59.999Z', updatedAt: '9999-12-31T23:59:59.999Z' },
      'line 1.session.createdAt: is in the future',
    ],
    [
      'an updatedAt before createdAt',
      { updatedAt: '2024-01-02T03:04:05.677Z' },
      'line 1.session.updatedAt: is before createdAt',
    ],
  ])('refuses a session line with %s', (_case, fields, said) => {
    expect(refused(() => head(fields))).toBe(said);
  });

  it('takes a revision at the bound, and times up to a minute ahead', () => {
    const soon = new Date(Date.now() + 30_000).toISOString();
    expect(head({ revision: 1_000_000_000, updatedAt: soon })).toMatchObject({
      session: { revision: 1_000_000_000 },
    });
    expect(head({ updatedAt: SESSION.createdAt })).toMatchObject({ kind: 'session' });
  });

  it.each([
    '2026-02-30T00:00:00.000Z',
    '2025-02-29T00:00:00.000Z',
    '2024-04-31T00:00:00.000Z',
    '2024-01-00T00:00:00.000Z',
    '2024-00-10T00:00:00.000Z',
    '2024-01-02T24:00:00.000Z',
    '2024-01-02T23:60:00.000Z',
    '2024-01-02T23:59:60.000Z',
    '2024-01-02T23:59:59.000+24:00',
    '2024-01-02T23:59:59.000+01:60',
  ])('refuses %s, a time no calendar has', (time) => {
    expect(refused(() => line({ createdAt: time }))).toMatch(
      /^line 7\.message\.createdAt: must be/,
    );
  });

  it.each([
    ['2024-02-29T23:59:59.999Z', Date.UTC(2024, 1, 29, 23, 59, 59, 999)],
    ['2024-12-31T00:00:00Z', Date.UTC(2024, 11, 31)],
    ['2024-01-02T00:30:00-23:59', Date.UTC(2024, 0, 3, 0, 29)],
  ])('takes %s', (time, ms) => {
    expect(line({ createdAt: time })).toMatchObject({ message: { createdAt: ms } });
  });

  it('refuses JSON nested past the bound before parsing it', () => {
    const deep = `{"message":${'['.repeat(40)}${']'.repeat(40)}}`;
    expect(refused(() => line({}, deep))).toMatch(/^line 7: .*deep/);
  });

  it('accepts metadata of exactly the message bound', () => {
    expect(head({ metadata: 'x'.repeat(98) })).toMatchObject({ kind: 'session' });
  });
});
