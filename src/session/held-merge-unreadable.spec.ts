import { type Page, type PageRequest } from '../common/pagination/page-request.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { journalUnavailable, withHeld, type JournalBounds } from './held-merge.js';

// Ten messages of one session, their keys in accepted order.
const m = Array.from({ length: 10 }, (_, index) => acceptedRecord('s', `message ${index}`));
const persisted = (record: MessageRecord) => ({ record, status: AppendStatus.PERSISTED });
const queued = (record: MessageRecord) => ({ record, status: AppendStatus.QUEUED as const });
const stored = (items: MessageRecord[], flags = {}): Page<MessageRecord> => ({
  items,
  hasNextPage: false,
  hasPreviousPage: false,
  ...flags,
});
const first = (count: number, after?: MessageRecord): PageRequest<string> => ({
  direction: 'forward',
  count,
  ...(after ? { after: after.orderKey } : {}),
});
const last = (count: number): PageRequest<string> => ({ direction: 'backward', count });
/** The journal could not read `record` back: its file cannot be read now. */
const unreadable = (record: MessageRecord, more: Partial<JournalBounds> = {}): JournalBounds => ({
  beyondCursor: false,
  unreadable: { id: record.id, orderKey: record.orderKey },
  ...more,
});
const refused = expect.objectContaining({ code: ScribeErrorCode.JournalUnavailable });

describe(`${withHeld.name} with a journal-only message that cannot be read now`, () => {
  it('refuses a forward page that would list it, rather than show a gap', () => {
    expect(() => withHeld(stored([m[0], m[1]]), first(5), [], unreadable(m[2]))).toThrow(refused);
  });

  it('refuses a page that would list it between messages it can show', () => {
    const pending = [queued(m[3])];

    expect(() => withHeld(stored([m[0], m[1]]), first(5), pending, unreadable(m[2]))).toThrow(
      refused,
    );
  });

  it('answers a forward page that ends before it, where the database has more', () => {
    const listed = withHeld(
      stored([m[0], m[1]], { hasNextPage: true }),
      first(2),
      [],
      unreadable(m[3]),
    );

    expect(listed).toEqual({
      items: [persisted(m[0]), persisted(m[1])],
      hasNextPage: true,
      hasPreviousPage: false,
    });
  });

  it('answers a page full before it, and says more follow', () => {
    const listed = withHeld(stored([m[0], m[1]]), first(2), [], unreadable(m[2]));

    expect(listed).toEqual({
      items: [persisted(m[0]), persisted(m[1])],
      hasNextPage: true,
      hasPreviousPage: false,
    });
  });

  it('refuses a backward page that would list it, and answers one that ends after it', () => {
    expect(() => withHeld(stored([m[8], m[9]]), last(5), [], unreadable(m[7]))).toThrow(refused);
    const listed = withHeld(stored([m[8], m[9]]), last(2), [], unreadable(m[7]));

    expect(listed).toEqual({
      items: [persisted(m[8]), persisted(m[9])],
      hasNextPage: false,
      hasPreviousPage: true,
    });
  });

  it('answers a page past the horizon from it', () => {
    const listed = withHeld(
      stored([m[0]]),
      first(5),
      [queued(m[1])],
      unreadable(m[3], { horizon: m[2].orderKey }),
    );

    expect(listed.items).toEqual([persisted(m[0]), queued(m[1])]);
    expect(listed.hasNextPage).toBe(true);
  });

  it('answers a page whose database read has it stored meanwhile, once', () => {
    const listed = withHeld(stored([m[0], m[1], m[2]]), first(5), [], unreadable(m[2]));

    expect(listed.items).toEqual([persisted(m[0]), persisted(m[1]), persisted(m[2])]);
  });
});

describe(journalUnavailable.name, () => {
  it('says the message is accepted, where to look, and to retry', () => {
    const sut = journalUnavailable();

    expect(sut.code).toBe(ScribeErrorCode.JournalUnavailable);
    expect(sut.message).toMatch(/accepted \(QUEUED\).*spoolStatus\.blocked.*Retry later/);
  });

  it('says of a damaged line that it is set aside and then counted no more', () => {
    const sut = journalUnavailable(true);

    expect(sut.code).toBe(ScribeErrorCode.JournalUnavailable);
    expect(sut.message).toBe(
      'A message of this page is accepted (QUEUED) but its journal line is damaged: the next write-back sets it aside, and it is counted no more; the page is not answered rather than answered with a gap. Retry later, or read a page that does not reach it.',
    );
  });
});

describe(`${withHeld.name} with a journal-only message whose line is damaged`, () => {
  const damaged = (record: MessageRecord): JournalBounds => ({
    beyondCursor: false,
    unreadable: { id: record.id, orderKey: record.orderKey, damaged: true },
  });

  it('refuses a page that would list it, saying it is damaged', () => {
    expect(() => withHeld(stored([m[0], m[1]]), first(5), [], damaged(m[2]))).toThrow(
      expect.objectContaining({
        code: ScribeErrorCode.JournalUnavailable,
        message: expect.stringContaining('its journal line is damaged'),
      }),
    );
  });

  it('answers a page that ends before it', () => {
    const listed = withHeld(stored([m[0]], { hasNextPage: true }), first(1), [], damaged(m[2]));

    expect(listed.items).toEqual([persisted(m[0])]);
  });
});
