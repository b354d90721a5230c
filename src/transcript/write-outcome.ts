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
