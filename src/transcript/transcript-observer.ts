import { type MessageRecord } from './message-record.js';

/** Told about writes of messages, e.g. to keep a session cache current. */
export abstract class TranscriptObserver {
  /** `stored` were committed, leaving the session at `revision`. */
  abstract messagesStored(sessionId: string, stored: MessageRecord[], revision: number): void;

  /** A write of the session failed: anything read while it was under way may not be true. */
  abstract writeFailed(sessionId: string): void;
}
