import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { encodeCursor } from '../pagination/cursor.js';
import { AppendStatus } from '../../message/append-status.js';
import { MessageRole } from '../../message/message-role.js';
import { acceptedRecord } from '../../message/testing/message-record.fixture.js';
import { appendedEvent, changedEvent } from '../../message/transcript-event.js';
import {
  decodeMessageCursor,
  decodeMessagePlace,
  heldCursorKey,
  messageCursor,
  toMessageEvent,
  toMessageModel,
} from './message.mapper.js';
import { MessageEventKind } from './models/message-event.model.js';

describe('message cursors', () => {
  const record = acceptedRecord('s', 'x');

  it('name the order key alone until the message has a commit number, then both', () => {
    expect(messageCursor(record)).toBe(encodeCursor(record.orderKey));
    expect(messageCursor({ ...record, commitSeq: null })).toBe(encodeCursor(record.orderKey));
    expect(messageCursor({ ...record, commitSeq: 42 })).toBe(encodeCursor(`${record.orderKey}#42`));
  });

  it.each([
    ['a page', (key: string) => key, {}],
    ['a live event', (key: string) => `${key}#42`, { seq: 42 }],
    ['a page, of a held message', heldCursorKey, { held: true }],
  ])("decode %s's place; pages read its order key alone", (_kind, form, place) => {
    const cursor = encodeCursor(form(record.orderKey));
    expect(decodeMessagePlace(cursor)).toEqual({ key: record.orderKey, ...place });
    expect(decodeMessageCursor(cursor)).toBe(record.orderKey);
  });

  it.each([
    ['a commit number that is not one', (key: string) => `${key}#x`],
    ['a commit number too long', (key: string) => `${key}#${'9'.repeat(16)}`],
    ['both marks', (key: string) => `${key}#1!`],
    ['a mark twice', (key: string) => `${key}!!`],
    ['something that is no order key', () => 'not-a-key#1'],
  ])('refuse %s, naming the argument', (_kind, form) => {
    const cursor = encodeCursor(form(record.orderKey));
    for (const argument of ['after', 'before'] as const) {
      expect(() => decodeMessagePlace(cursor, argument)).toThrow(
        expect.objectContaining({ code: ScribeErrorCode.BadUserInput, field: argument }),
      );
    }
  });
});

describe(toMessageModel.name, () => {
  const record = acceptedRecord('s', 'hello', {
    role: MessageRole.TOOL,
    clientMessageId: 'c-1',
    toolName: 'search',
    toolCallId: 't-1',
    toolCalls: [{ id: 1 }],
    metadata: { a: 1 },
  });

  it('gives every field of a message never changed: revision 1, no edit, no redaction', () => {
    expect(toMessageModel(record)).toStrictEqual({
      id: record.id,
      sessionId: 's',
      status: AppendStatus.PERSISTED,
      role: MessageRole.TOOL,
      content: 'hello',
      clientMessageId: 'c-1',
      toolName: 'search',
      toolCallId: 't-1',
      toolCalls: [{ id: 1 }],
      metadata: { a: 1 },
      createdAt: new Date(record.acceptedAt),
      revision: 1,
      editedAt: null,
      redacted: false,
      redactedAt: null,
      redactionReason: null,
    });
    expect(
      toMessageModel(
        { ...record, revision: 1, editedAt: null, redactedAt: null, redactionReason: null },
        AppendStatus.QUEUED,
      ),
    ).toMatchObject({
      status: AppendStatus.QUEUED,
      revision: 1,
      editedAt: null,
      redacted: false,
      redactedAt: null,
      redactionReason: null,
    });
  });

  it("gives an edited message's revision and the time of its last edit", () => {
    expect(toMessageModel({ ...record, revision: 4, editedAt: 1_000 })).toMatchObject({
      revision: 4,
      editedAt: new Date(1_000),
      redacted: false,
      redactedAt: null,
    });
    expect(toMessageModel({ ...record, revision: 2, editedAt: 0 }).editedAt).toEqual(new Date(0));
  });

  it("tells a redacted message by its redaction's time and reason", () => {
    const tombstone = {
      ...record,
      content: '',
      toolCalls: null,
      metadata: null,
      revision: 3,
      redactedAt: 2_000,
      redactionReason: 'spam',
    };
    expect(toMessageModel(tombstone)).toMatchObject({
      content: '',
      revision: 3,
      editedAt: null,
      redacted: true,
      redactedAt: new Date(2_000),
      redactionReason: 'spam',
    });
    expect(toMessageModel({ ...tombstone, redactedAt: 0 })).toMatchObject({
      redacted: true,
      redactedAt: new Date(0),
    });
  });
});

describe(toMessageEvent.name, () => {
  const stored = acceptedRecord('s', 'hello', { commitSeq: 7 });

  it('tells an append, with the cursor of its commit number', () => {
    const event = toMessageEvent(appendedEvent(stored));

    expect(event).toStrictEqual({
      kind: MessageEventKind.APPENDED,
      cursor: encodeCursor(`${stored.orderKey}#7`),
      node: toMessageModel(stored),
    });
    expect(decodeMessagePlace(event.cursor)).toEqual({ key: stored.orderKey, seq: 7 });
  });

  it('tells an edit, with the cursor of the commit number of the change', () => {
    const edited = { ...stored, content: 'hi', revision: 2, editedAt: 5, changeSeq: 12 };

    const event = toMessageEvent(changedEvent(edited));

    expect(event).toStrictEqual({
      kind: MessageEventKind.EDITED,
      cursor: encodeCursor(`${stored.orderKey}#12`),
      node: toMessageModel(edited),
    });
    expect(event.node).toMatchObject({ content: 'hi', revision: 2 });
  });

  it('tells a redaction', () => {
    const tombstone = { ...stored, content: '', revision: 2, redactedAt: 5, changeSeq: 13 };

    expect(toMessageEvent(changedEvent(tombstone))).toMatchObject({
      kind: MessageEventKind.REDACTED,
      cursor: encodeCursor(`${stored.orderKey}#13`),
      node: { redacted: true },
    });
  });

  it("gives the order key alone for a message stored before commit numbers, as a page's cursor", () => {
    const old = acceptedRecord('s', 'old');

    expect(toMessageEvent(appendedEvent(old)).cursor).toBe(encodeCursor(old.orderKey));
    expect(toMessageEvent({ kind: 'edited', seq: undefined, record: old }).cursor).toBe(
      encodeCursor(old.orderKey),
    );
  });
});
