import { type MessageRecord } from './message-record.js';

/** Told about every successful write of messages, e.g. to keep a session cache current. */
export abstract class TranscriptObserver {
  /**
   * `exact` is false when the write may have skipped messages that were stored already
   * (replays), so the observer cannot count on every record being new.
   */
  abstract messagesStored(sessionId: string, records: MessageRecord[], exact: boolean): void;
}
