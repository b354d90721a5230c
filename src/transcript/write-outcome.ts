import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';

/**
 * What became of the fresh messages of one append: the one vocabulary of the write path.
 * `stored`: committed (PERSISTED). `queued`: journaled to local disk and synced, stored once
 * the database takes it (QUEUED). `buffered`: neither the database nor the disk could take it;
 * held in memory, best effort (BUFFERED). `conflict`: some were stored already by another
 * acceptance of the same client id, to be answered with what is stored. `refused`: the
 * database refuses them for a reason of its own; nothing was stored.
 */
export type WriteOutcome =
  | { kind: 'stored' }
  | { kind: 'queued' }
  | { kind: 'buffered' }
  | { kind: 'conflict'; skipped: MessageRecord[] }
  | { kind: 'refused'; reason: string };

/**
 * The status an accepted write's fresh messages are answered with: PERSISTED once stored (or
 * stored first by another acceptance), QUEUED once journaled, BUFFERED when held in memory.
 */
export function statusOf(outcome: Exclude<WriteOutcome, { kind: 'refused' }>): AppendStatus {
  switch (outcome.kind) {
    case 'queued':
      return AppendStatus.QUEUED;
    case 'buffered':
      return AppendStatus.BUFFERED;
    default:
      return AppendStatus.PERSISTED;
  }
}
