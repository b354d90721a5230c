import { type MessageRecord } from './message-record.js';

/** What happened to a message, in a session's commit order. */
export type TranscriptEventKind = 'appended' | 'edited' | 'redacted';

/**
 * One entry of a session's commit order as a live reader sees it: a message stored (at its
 * `commitSeq`), or a stored message changed (at its `changeSeq`). The record is the message as
 * it read when the event was read: a change read later shows the later state, never an older.
 */
export interface TranscriptEvent {
  kind: TranscriptEventKind;
  /** The commit number of the event; undefined for a message stored before commit numbers. */
  seq: number | undefined;
  record: MessageRecord;
}

/** The event of a message as stored. */
export function appendedEvent(record: MessageRecord): TranscriptEvent {
  return { kind: 'appended', seq: record.commitSeq ?? undefined, record };
}

/** The event of a message's last change: edited, or redacted once it has no content left. */
export function changedEvent(record: MessageRecord): TranscriptEvent {
  return {
    kind: record.redactedAt != null ? 'redacted' : 'edited',
    seq: record.changeSeq ?? undefined,
    record,
  };
}
