import {
  CHANGES_CHANNEL,
  IDS_PER_NOTICE,
  MESSAGES_CHANNEL,
  SESSIONS_CHANNEL,
  changeNotice,
  messageNotices,
  notifyAndCommit,
  parseChangeNotice,
  parseMessageNotice,
} from './commit-notices.js';

const ids = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, offset) => `m${from + offset}`);

describe(messageNotices.name, () => {
  it('names the channels the instances share', () => {
    expect(MESSAGES_CHANNEL).toBe('scribe_messages');
    expect(SESSIONS_CHANNEL).toBe('scribe_sessions');
  });

  it('announces nothing when no message was committed', () => {
    expect(messageNotices('s1', [])).toEqual([]);
  });

  it('announces a few ids in one notice: the session id, then the ids in order', () => {
    expect(messageNotices('s1', ['m2', 'm1', 'm3'])).toEqual(['s1 m2 m1 m3']);
  });

  it(`puts up to ${IDS_PER_NOTICE} ids in a notice, and the rest in more, in order`, () => {
    expect(IDS_PER_NOTICE).toBe(200);

    expect(messageNotices('s1', ids(1, 200))).toEqual([['s1', ...ids(1, 200)].join(' ')]);
    expect(messageNotices('s1', ids(1, 401))).toEqual([
      ['s1', ...ids(1, 200)].join(' '),
      ['s1', ...ids(201, 400)].join(' '),
      's1 m401',
    ]);
  });

  it("keeps the longest notice under PostgreSQL's 8,000-byte limit", () => {
    const session = 's'.repeat(128);
    const longest = Array.from({ length: IDS_PER_NOTICE }, () => 'x'.repeat(36));

    const [notice] = messageNotices(session, longest);

    expect(Buffer.byteLength(notice)).toBeLessThan(8000);
  });
});

describe(parseMessageNotice.name, () => {
  it('reads back what messageNotices wrote', () => {
    const notices = messageNotices('s1', ids(1, 201));

    expect(notices.map(parseMessageNotice)).toEqual([
      { sessionId: 's1', messageIds: ids(1, 200) },
      { sessionId: 's1', messageIds: ['m201'] },
    ]);
  });

  it('reads a notice of one message', () => {
    expect(parseMessageNotice('s1 m1')).toEqual({ sessionId: 's1', messageIds: ['m1'] });
  });

  it.each([
    ['no payload', undefined],
    ['an empty payload', ''],
    ['a session without messages', 's1'],
    ['no session id', ' m1'],
    ['an empty id between two', 's1 m1  m2'],
    ['an empty id at the end', 's1 m1 '],
  ])('refuses %s', (_case, payload) => {
    expect(parseMessageNotice(payload)).toBeUndefined();
  });
});

describe(changeNotice.name, () => {
  it('names a channel of its own', () => {
    expect(CHANGES_CHANNEL).toBe('scribe_changes');
  });

  it('announces the session, the message and the commit number the change took', () => {
    expect(changeNotice('s1', 'm1', 42)).toBe('s1 m1 42');
  });

  it("keeps the longest notice under PostgreSQL's 8,000-byte limit", () => {
    const notice = changeNotice('s'.repeat(128), 'x'.repeat(36), Number.MAX_SAFE_INTEGER);

    expect(Buffer.byteLength(notice)).toBeLessThan(8000);
  });
});

describe(parseChangeNotice.name, () => {
  it('reads back what changeNotice wrote, the number as a number', () => {
    expect(parseChangeNotice(changeNotice('s1', 'm1', 42))).toEqual({
      sessionId: 's1',
      messageId: 'm1',
      seq: 42,
    });
    expect(parseChangeNotice('s.a:b_c-9 0190a5b4-7c1e-7d2a-9b3c-4d5e6f708192 0')).toEqual({
      sessionId: 's.a:b_c-9',
      messageId: '0190a5b4-7c1e-7d2a-9b3c-4d5e6f708192',
      seq: 0,
    });
  });

  it('reads a number of up to 15 digits', () => {
    expect(parseChangeNotice(`s1 m1 ${'9'.repeat(15)}`)?.seq).toBe(999_999_999_999_999);
  });

  it.each([
    ['no payload', undefined],
    ['an empty payload', ''],
    ['a session alone', 's1'],
    ['no number', 's1 m1'],
    ['a word more', 's1 m1 42 x'],
    ['a message notice of two ids', 's1 m1 m2'],
    ['no session id', ' m1 42'],
    ['no message id', 's1  42'],
    ['an empty number', 's1 m1 '],
    ['a number of 16 digits', `s1 m1 ${'9'.repeat(16)}`],
    ['a negative number', 's1 m1 -1'],
    ['a fraction', 's1 m1 1.5'],
    ['a number with a letter before it', 's1 m1 x42'],
    ['a number with a letter after it', 's1 m1 42x'],
  ])('refuses %s', (_case, payload) => {
    expect(parseChangeNotice(payload)).toBeUndefined();
  });
});

describe(notifyAndCommit.name, () => {
  it('ends a transaction with its notices, then COMMIT, each payload an escaped literal', () => {
    expect(notifyAndCommit(MESSAGES_CHANNEL, ['s1 m1 m2', "it's", 'a\\b'])).toBe(
      "SELECT pg_notify('scribe_messages' || '_' || substr(md5(current_schema()), 1, 12), notice)" +
        " FROM unnest(ARRAY['s1 m1 m2', 'it''s',  E'a\\\\b']::text[]) AS notice; COMMIT",
    );
  });

  it('is a plain COMMIT with nothing to announce', () => {
    expect(notifyAndCommit(MESSAGES_CHANNEL, [])).toBe('COMMIT');
  });
});
