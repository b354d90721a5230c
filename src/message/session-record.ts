import { type MessageRecord } from './message-record.js';

/** A session's metadata as the domain knows it. Times are epoch milliseconds. */
export interface SessionRecord {
  id: string;
  title: string | null;
  createdAt: number;
  updatedAt: number;
  messageCount: number;
  /** Grows by one for every stored message of the session, whichever instance stored it. */
  revision: number;
}

/** A session with its whole transcript, in accepted order: what a full load produces. */
export interface FullSession {
  session: SessionRecord;
  messages: MessageRecord[];
}
