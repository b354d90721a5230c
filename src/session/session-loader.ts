import { type FullSession, type SessionRecord } from '../message/session-record.js';

/**
 * What the SessionResolveGate loads sessions through, handed to it once when it is built. An
 * abstract class rather than an interface because it is also the Nest token: a host or a test
 * swaps the reads (`overrideProvider(SessionLoader)`) and keeps the gate's bounds and caching.
 */
export abstract class SessionLoader {
  /** Metadata + whole transcript; null when the session does not exist. The expensive read. */
  abstract loadFull(sessionId: string): Promise<FullSession | null>;
  /** Metadata only; null when unknown. Cheap. */
  abstract loadMetadata(sessionId: string): Promise<SessionRecord | null>;
}
