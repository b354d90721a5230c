import { jest } from '@jest/globals';
import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { CHANGE_KEYS, changesOf } from './import-changes.js';

const AT = 'line 3.message';
// The import runs at NOW; the message was written at CREATED.
const NOW = Date.UTC(2026, 0, 10, 12, 0, 0);
const CREATED = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();
const EDITED = iso(CREATED + 60_000);
const REDACTED = iso(CREATED + 120_000);

/** A redacted message's line, as an export writes it, with `fields` changed. */
const redactedLine = (fields: Record<string, unknown> = {}) => ({
  content: '',
  metadata: null,
  toolCalls: null,
  revision: 3,
  editedAt: EDITED,
  redacted: true,
  redactedAt: REDACTED,
  redactionReason: 'spam',
  ...fields,
});

/** An edited message's line, as an export writes it, with `fields` changed. */
const editedLine = (fields: Record<string, unknown> = {}) => ({
  content: 'new words',
  metadata: { a: 1 },
  toolCalls: [{ id: 1 }],
  revision: 2,
  editedAt: EDITED,
  redacted: false,
  redactedAt: null,
  redactionReason: null,
  ...fields,
});

const changes = (body: Record<string, unknown>) => changesOf(body, AT, CREATED);

/** What the line was refused with: the field and message (always BAD_USER_INPUT). */
function refusal(body: Record<string, unknown>): { field: string | undefined; message: string } {
  try {
    changes(body);
  } catch (error) {
    expect(error).toBeInstanceOf(ScribeException);
    expect((error as ScribeException).code).toBe(ScribeErrorCode.BadUserInput);
    const { field, message } = error as ScribeException;
    return { field, message };
  }
  throw new Error('not refused');
}

describe(changesOf.name, () => {
  beforeEach(() => {
    jest.spyOn(Date, 'now').mockReturnValue(NOW);
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('names the keys an export writes of the changes', () => {
    expect(CHANGE_KEYS).toEqual([
      'revision',
      'editedAt',
      'redacted',
      'redactedAt',
      'redactionReason',
    ]);
  });

  it('gives nothing for a message never changed, however the line says so', () => {
    for (const body of [
      { content: 'x' },
      { content: 'x', revision: 1 },
      { content: 'x', revision: null },
      { content: 'x', revision: 1, editedAt: null, redacted: false, redactedAt: null },
      { content: 'x', redactionReason: null },
    ]) {
      expect(changes(body)).toStrictEqual({});
    }
  });

  it('gives the revision and the time of the last edit of an edited message', () => {
    expect(changes(editedLine())).toStrictEqual({
      revision: 2,
      editedAt: CREATED + 60_000,
      redactedAt: null,
      redactionReason: null,
    });
    expect(changes(editedLine({ redacted: undefined, redactedAt: undefined }))).toStrictEqual({
      revision: 2,
      editedAt: CREATED + 60_000,
      redactedAt: null,
      redactionReason: null,
    });
  });

  it('gives the revision, times and reason of a redacted message, edited before or not', () => {
    expect(changes(redactedLine())).toStrictEqual({
      revision: 3,
      editedAt: CREATED + 60_000,
      redactedAt: CREATED + 120_000,
      redactionReason: 'spam',
    });
    expect(
      changes(
        redactedLine({
          revision: 2,
          editedAt: null,
          redacted: undefined,
          metadata: undefined,
          toolCalls: undefined,
        }),
      ),
    ).toStrictEqual({
      revision: 2,
      editedAt: null,
      redactedAt: CREATED + 120_000,
      redactionReason: 'spam',
    });
  });

  it('refuses an edit dated after the redaction, and takes one at the same time', () => {
    expect(refusal(redactedLine({ editedAt: iso(CREATED + 120_001) }))).toEqual({
      field: `${AT}.editedAt`,
      message: `${AT}.editedAt: is after redactedAt: a redacted message is never edited`,
    });
    expect(changes(redactedLine({ editedAt: REDACTED }))).toMatchObject({
      editedAt: CREATED + 120_000,
      redactedAt: CREATED + 120_000,
    });
  });

  it('takes a revision up to 1000000000', () => {
    expect(changes(editedLine({ revision: 1_000_000_000 }))).toMatchObject({
      revision: 1_000_000_000,
    });
  });

  it('takes times from the message own time to a minute ahead of this clock', () => {
    expect(changes(editedLine({ editedAt: iso(CREATED) }))).toMatchObject({ editedAt: CREATED });
    expect(changes(editedLine({ editedAt: iso(NOW + 30_000) }))).toMatchObject({
      editedAt: NOW + 30_000,
    });
    expect(changes(redactedLine({ redactedAt: iso(NOW + 60_000) }))).toMatchObject({
      redactedAt: NOW + 60_000,
    });
  });

  it('takes a reason of 512 characters', () => {
    expect(changes(redactedLine({ redactionReason: 'x'.repeat(512) }))).toMatchObject({
      redactionReason: 'x'.repeat(512),
    });
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['a revision of 0', editedLine({ revision: 0 }), 'revision', 'must be 1 to 1000000000'],
    [
      'a revision past the bound',
      editedLine({ revision: 1_000_000_001 }),
      'revision',
      'must be 1 to 1000000000',
    ],
    [
      'a revision that is text',
      editedLine({ revision: '2' }),
      'revision',
      'must be a whole number, 0 or more',
    ],
    [
      'a revision that is a fraction',
      editedLine({ revision: 1.5 }),
      'revision',
      'must be a whole number, 0 or more',
    ],
    [
      'an edit time that is no time',
      editedLine({ editedAt: 'yesterday' }),
      'editedAt',
      'must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    ],
    [
      'an edit before the message',
      editedLine({ editedAt: iso(CREATED - 1) }),
      'editedAt',
      'is before createdAt',
    ],
    [
      'an edit in the future',
      editedLine({ editedAt: iso(NOW + 60_001) }),
      'editedAt',
      'is in the future',
    ],
    [
      'a redaction before the message',
      redactedLine({ redactedAt: iso(CREATED - 1) }),
      'redactedAt',
      'is before createdAt',
    ],
    [
      'a redaction in the future',
      redactedLine({ redactedAt: iso(NOW + 60_001) }),
      'redactedAt',
      'is in the future',
    ],
    [
      'redacted true without a redaction time',
      editedLine({ redacted: true }),
      'redacted',
      'must be true exactly when redactedAt is set (and false, or absent, otherwise)',
    ],
    [
      'redacted false with a redaction time',
      redactedLine({ redacted: false }),
      'redacted',
      'must be true exactly when redactedAt is set (and false, or absent, otherwise)',
    ],
    [
      'redacted null',
      editedLine({ redacted: null }),
      'redacted',
      'must be true exactly when redactedAt is set (and false, or absent, otherwise)',
    ],
    [
      'a reason without a redaction',
      editedLine({ redactionReason: 'spam' }),
      'redactionReason',
      'must be given exactly when the message is redacted (redactedAt)',
    ],
    [
      'a redaction without a reason',
      redactedLine({ redactionReason: null }),
      'redactionReason',
      'must be given exactly when the message is redacted (redactedAt)',
    ],
    [
      'an empty reason',
      redactedLine({ redactionReason: '' }),
      'redactionReason',
      'must be 1 to 512 characters long',
    ],
    [
      'a reason too long',
      redactedLine({ redactionReason: 'x'.repeat(513) }),
      'redactionReason',
      'must be 1 to 512 characters long',
    ],
    [
      'a reason that is a number',
      redactedLine({ redactionReason: 7 }),
      'redactionReason',
      'must be a string',
    ],
    [
      'a reason with a NUL',
      redactedLine({ redactionReason: 'a\u0000' }),
      'redactionReason',
      'must not contain the NUL character (U+0000)',
    ],
    [
      'content on a redacted message',
      redactedLine({ content: 'left over' }),
      'content',
      'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    ],
    [
      'content and metadata on a redacted message (the content named first)',
      redactedLine({ content: 'left over', metadata: { a: 1 } }),
      'content',
      'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    ],
    [
      'metadata on a redacted message',
      redactedLine({ metadata: {} }),
      'metadata',
      'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    ],
    [
      'metadata of false on a redacted message',
      redactedLine({ metadata: false }),
      'metadata',
      'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    ],
    [
      'tool calls on a redacted message',
      redactedLine({ toolCalls: [] }),
      'toolCalls',
      'must be empty on a redacted message: "" for content, null for metadata and toolCalls',
    ],
    [
      'an edit time at revision 1',
      editedLine({ revision: 1 }),
      'revision',
      'must be more than 1 on a message edited or redacted',
    ],
    [
      'an edit time and no revision',
      editedLine({ revision: undefined }),
      'revision',
      'must be more than 1 on a message edited or redacted',
    ],
    [
      'a redaction at revision 1',
      redactedLine({ revision: 1, editedAt: null }),
      'revision',
      'must be more than 1 on a message edited or redacted',
    ],
    [
      'a revision past 1 with no change',
      editedLine({ editedAt: null }),
      'revision',
      'must be 1 on a message neither edited nor redacted',
    ],
  ])('refuses %s, naming the field', (_case, body, key, message) => {
    expect(refusal(body)).toEqual({ field: `${AT}.${key}`, message: `${AT}.${key}: ${message}` });
  });

  it('checks the revision before the times, and the times before the reason', () => {
    expect(refusal(editedLine({ revision: 0, editedAt: 'x' })).field).toBe(`${AT}.revision`);
    expect(refusal(editedLine({ editedAt: 'x', redactedAt: 'x' })).field).toBe(`${AT}.editedAt`);
    expect(
      refusal(editedLine({ redactedAt: iso(NOW + 60_001), redactionReason: 'spam' })).field,
    ).toBe(`${AT}.redactedAt`);
    expect(refusal(redactedLine({ redacted: false, redactionReason: null })).field).toBe(
      `${AT}.redacted`,
    );
    expect(refusal(redactedLine({ redactionReason: '', content: 'x' })).field).toBe(
      `${AT}.redactionReason`,
    );
    expect(refusal(redactedLine({ content: 'x', revision: 1 })).field).toBe(`${AT}.content`);
  });
});
