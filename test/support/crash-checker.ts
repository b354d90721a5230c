import { type AppendStatus } from './fault-helpers.js';

/** A message a client sent, in its send order, with the last answer it got. */
export interface SentMessage {
  sessionId: string;
  clientMessageId: string;
  content: string;
  /**
   * Where each send of it came in its session's sends, in order: one place, or more when a
   * send got no answer and the client sent it again (a retry) after other messages of its own.
   */
  sends: number[];
  /** Null when no answer came (the request was in flight at a kill): no promise was made. */
  answer: { status: AppendStatus; id: string } | null;
}

/** A row of the messages table. */
export interface StoredMessage {
  id: string;
  sessionId: string;
  clientMessageId: string | null;
  content: string;
  orderKey: string;
}

/** What the database holds: every message in transcript order, and each session's counter. */
export interface StoredTranscripts {
  /** By session, then order key: the order a transcript is read in. */
  messages: StoredMessage[];
  sessions: { id: string; messageCount: number }[];
}

export interface TranscriptCheck {
  /** Messages answered with a promised status. */
  acknowledged: number;
  /** Acknowledged, not stored. */
  lost: SentMessage[];
  /** Stored rows that repeat an earlier row's id, client id or content. */
  duplicated: StoredMessage[];
  /** Stored rows that come before a message their client sent earlier (see checkTranscripts). */
  outOfOrder: { row: StoredMessage; after: string }[];
  /** Stored rows no client sent, or not as it was sent. */
  unexpected: { row: StoredMessage; why: string }[];
  /** Sessions whose message counter is not the number of their stored rows. */
  miscounted: { sessionId: string; messageCount: number; rows: number }[];
}

/** The answers that promise the message survives a crash; BUFFERED promises nothing. */
export const PROMISED: readonly AppendStatus[] = ['PERSISTED', 'QUEUED'];

/**
 * Holds the stored transcripts against what clients sent: every acknowledged message stored,
 * each message at most once, every session's messages in its client's send order (one
 * sequential client per session, so send order is acceptance order). A message is accepted at
 * one of its sends: a send that got no answer (in flight at a kill) may have been accepted
 * (journaled, then written back) or not, and then its retry, sent after other messages of the
 * session, is accepted afresh after them. So a message sent more than once may stand at any of
 * its sends, and the stored order must be explained by one send per message, in send order;
 * a message answered at its first send has that one place, as before. Messages
 * that got no answer may be stored or not. `promised` names the answers counted as promises
 * (the control run counts BUFFERED too, to prove this check can see a loss).
 */
export function checkTranscripts(
  sent: readonly SentMessage[],
  stored: StoredTranscripts,
  promised: readonly AppendStatus[] = PROMISED,
): TranscriptCheck {
  const sentByClientId = new Map<string, SentMessage>();
  for (const message of sent) {
    sentByClientId.set(key(message.sessionId, message.clientMessageId), message);
  }

  const duplicated: StoredMessage[] = [];
  const outOfOrder: TranscriptCheck['outOfOrder'] = [];
  const unexpected: TranscriptCheck['unexpected'] = [];
  const seenIds = new Set<string>();
  const seenClientIds = new Set<string>();
  const seenContents = new Set<string>();
  const latest = new Map<string, { position: number; clientMessageId: string }>();
  const rowsPerSession = new Map<string, number>();
  for (const row of stored.messages) {
    rowsPerSession.set(row.sessionId, (rowsPerSession.get(row.sessionId) ?? 0) + 1);
    const clientKey = key(row.sessionId, row.clientMessageId ?? '');
    const contentKey = key(row.sessionId, row.content);
    if (seenIds.has(row.id) || seenClientIds.has(clientKey) || seenContents.has(contentKey)) {
      duplicated.push(row);
      continue;
    }
    seenIds.add(row.id);
    seenClientIds.add(clientKey);
    seenContents.add(contentKey);
    const found = row.clientMessageId === null ? undefined : sentByClientId.get(clientKey);
    if (!found) {
      unexpected.push({ row, why: 'no client sent it' });
      continue;
    }
    if (found.content !== row.content) {
      unexpected.push({ row, why: `sent as ${JSON.stringify(found.content)}` });
    }
    if (found.answer && found.answer.id !== row.id) {
      unexpected.push({ row, why: `answered with id ${found.answer.id}` });
    }
    // The earliest of its sends after the send the row before it stood at: taking the earliest
    // leaves the most room to the rows after it, so the order is found out of order only when
    // no choice of one send per message explains it.
    const before = latest.get(row.sessionId);
    const position = Math.min(...found.sends.filter((at) => !before || at > before.position));
    if (!Number.isFinite(position)) {
      outOfOrder.push({ row, after: before?.clientMessageId ?? '(nothing)' });
    } else {
      latest.set(row.sessionId, { position, clientMessageId: found.clientMessageId });
    }
  }

  const acknowledged = sent.filter(
    (message) => message.answer !== null && promised.includes(message.answer.status),
  );
  const lost = acknowledged.filter(
    (message) => !seenClientIds.has(key(message.sessionId, message.clientMessageId)),
  );
  const miscounted = stored.sessions
    .map((session) => ({
      sessionId: session.id,
      messageCount: session.messageCount,
      rows: rowsPerSession.get(session.id) ?? 0,
    }))
    .filter((session) => session.messageCount !== session.rows);
  return {
    acknowledged: acknowledged.length,
    lost,
    duplicated,
    outOfOrder,
    unexpected,
    miscounted,
  };
}

/** True when the check found nothing wrong. */
export function isClean(check: TranscriptCheck): boolean {
  return (
    check.lost.length +
      check.duplicated.length +
      check.outOfOrder.length +
      check.unexpected.length +
      check.miscounted.length ===
    0
  );
}

/** What went wrong, one line per finding, for a failure message. */
export function describeFindings(check: TranscriptCheck): string {
  const lines = [
    ...check.lost.map(
      (message) =>
        `lost: ${message.sessionId}/${message.clientMessageId} answered ${message.answer?.status} (id ${message.answer?.id})`,
    ),
    ...check.duplicated.map(
      (row) =>
        `duplicated: ${row.sessionId}/${row.clientMessageId} id ${row.id} at ${row.orderKey}`,
    ),
    ...check.outOfOrder.map(
      ({ row, after }) =>
        `out of order: ${row.sessionId}/${row.clientMessageId} (${row.orderKey}) stored after ${after}`,
    ),
    ...check.unexpected.map(
      ({ row, why }) => `unexpected: ${row.sessionId}/${row.clientMessageId} id ${row.id}: ${why}`,
    ),
    ...check.miscounted.map(
      (session) =>
        `miscounted: session ${session.sessionId} says ${session.messageCount} message(s), holds ${session.rows}`,
    ),
  ];
  return lines.join('\n');
}

function key(sessionId: string, clientMessageId: string): string {
  return JSON.stringify([sessionId, clientMessageId]);
}
