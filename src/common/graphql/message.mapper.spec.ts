import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { encodeCursor } from '../pagination/cursor.js';
import { acceptedRecord } from '../../message/testing/message-record.fixture.js';
import {
  decodeMessageCursor,
  decodeMessagePlace,
  heldCursorKey,
  messageCursor,
} from './message.mapper.js';

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
        expect.objectContaining({ code: ScribeErrorCode.InvalidInput, field: argument }),
      );
    }
  });
});
