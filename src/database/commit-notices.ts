import pg from 'pg';

// What a PostgreSQL write tells the other instances through NOTIFY. A notice names what was
// committed, never its content: NOTIFY payloads stop short of 8,000 bytes, and a message alone
// may be larger. A listener that follows the session reads the messages by id.

/** Channel of the messages committed: `<session id> <message id> <message id> …`. */
export const MESSAGES_CHANNEL = 'scribe_messages';
/** Channel of sessions whose title or metadata changed: `<session id>`. */
export const SESSIONS_CHANNEL = 'scribe_sessions';

/**
 * Channel of stored messages edited or redacted: `<session id> <message id> <commit number>`,
 * the number the change took (a listener that reads the message later and finds a greater one
 * leaves it to that change's own notice, so that changes are heard in commit order).
 */
export const CHANGES_CHANNEL = 'scribe_changes';

/** Channel of sessions deleted: `<session id>`. */
export const DELETIONS_CHANNEL = 'scribe_deletions';

/**
 * Beginning of each commit feed's heartbeat channel (`scribe_heartbeat_<12 hex digits>`, one of
 * its own): the feed sends itself a notice there to prove its LISTEN connection still hears.
 * With the schema's ending it stays well under PostgreSQL's 63-byte channel names.
 */
export const HEARTBEAT_CHANNEL = 'scribe_heartbeat';

/**
 * Channels are a database's, not a schema's: each name ends with a digest of the schema the
 * connection writes to, so that deployments sharing a database in schemas of their own (and
 * test suites) do not hear each other. This SQL gives that ending.
 */
export const SCHEMA_SUFFIX_SQL = `'_' || substr(md5(current_schema()), 1, 12)`;

/**
 * The end of a write transaction: a notice on `channel` (the schema's ending added) carrying each
 * payload, then COMMIT, in one round trip. Why: each statement is a round trip that waits for the
 * server and then for the busy event loop (3–5 ms each under a batch load), and a transaction
 * makes only a few. A query of several statements is sent as a simple query, which PostgreSQL
 * runs in order and stops at the first error (no COMMIT then: the caller destroys the
 * connection, and the transaction is rolled back); it takes no parameters, so the payloads are
 * literals, escaped by the driver's own escapeLiteral.
 */
export function notifyAndCommit(channel: string, payloads: readonly string[]): string {
  if (payloads.length === 0) return 'COMMIT';
  const literals = payloads.map((payload) => pg.escapeLiteral(payload)).join(', ');
  return (
    `SELECT pg_notify(${pg.escapeLiteral(channel)} || ${SCHEMA_SUFFIX_SQL}, notice)` +
    ` FROM unnest(ARRAY[${literals}]::text[]) AS notice; COMMIT`
  );
}

/** One notice on `$1` (a channel above, the schema's ending added) carrying `$2`. */
export const NOTIFY_SQL = `SELECT pg_notify($1 || ${SCHEMA_SUFFIX_SQL}, $2)`;

/**
 * Message ids per notice. A session id is at most 128 ASCII characters and a message id 36, so
 * 128 + 200 × 37 bytes stays well under PostgreSQL's 8,000-byte limit.
 */
export const IDS_PER_NOTICE = 200;

export interface MessageNotice {
  sessionId: string;
  /** In the order they were committed. */
  messageIds: string[];
}

/** The payloads announcing `ids` of `sessionId`, in order. */
export function messageNotices(sessionId: string, ids: readonly string[]): string[] {
  const payloads: string[] = [];
  for (let start = 0; start < ids.length; start += IDS_PER_NOTICE) {
    payloads.push([sessionId, ...ids.slice(start, start + IDS_PER_NOTICE)].join(' '));
  }
  return payloads;
}

/** The notice a payload carries; undefined for one this code did not write. */
export function parseMessageNotice(payload: string | undefined): MessageNotice | undefined {
  const [sessionId, ...messageIds] = (payload ?? '').split(' ');
  if (!sessionId || messageIds.length === 0 || messageIds.some((id) => id === '')) {
    return undefined;
  }
  return { sessionId, messageIds };
}

export interface ChangeNotice {
  sessionId: string;
  messageId: string;
  seq: number;
}

/** The payload announcing a change of `messageId` that took commit number `seq`. */
export function changeNotice(sessionId: string, messageId: string, seq: number): string {
  return `${sessionId} ${messageId} ${seq}`;
}

/** The change a payload announces; undefined for one this code did not write. */
export function parseChangeNotice(payload: string | undefined): ChangeNotice | undefined {
  const parts = (payload ?? '').split(' ');
  if (parts.length !== 3 || !parts[0] || !parts[1] || !/^\d{1,15}$/.test(parts[2])) {
    return undefined;
  }
  return { sessionId: parts[0], messageId: parts[1], seq: Number(parts[2]) };
}
