import { type MessageRecord } from '../message/message-record.js';
import { type DiskEntry } from './journal-only-list.js';
import { type RecordLocation } from './journal-ledger.js';

// The shape every part of the journal hands around: a record and the line that holds it.

/** A journaled record, with the place that proves it is on disk. */
export interface JournaledRecord {
  record: MessageRecord;
  location: RecordLocation;
}

/** The journal-only list's entry for a journaled record that left memory. */
export function diskEntryOf({ record, location }: JournaledRecord): DiskEntry {
  return {
    id: record.id,
    sessionId: record.sessionId,
    orderKey: record.orderKey,
    acceptedAt: record.acceptedAt,
    location,
  };
}
