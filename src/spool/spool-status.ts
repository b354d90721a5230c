import { type BlockedFile } from './blocked-files.js';
import { type JournalIndex } from './journal-index.js';
import { type SetAsideLog } from './set-aside-log.js';

/** One thing the journal set aside or will not touch, with why. */
export interface SetAsideView {
  source: string;
  reason: string;
  /** Epoch ms when it was set aside; null for a foreign file found in the directory. */
  at: number | null;
  sessionId: string | null;
  messageId: string | null;
}

/** What the admin view shows of the spool. */
export interface SpoolStatusView {
  path: string;
  writable: boolean;
  error: string | null;
  messages: number;
  bytes: number;
  oldestAgeMs: number | null;
  sessions: { sessionId: string; messages: number }[];
  setAside: SetAsideView[];
  setAsideCount: number;
  /** Files owing records that cannot be used now (an outage, not corruption), with why. */
  blocked: BlockedFile[];
}

export function spoolStatusOf(
  path: string,
  error: string | null,
  index: JournalIndex,
  setAsideLog: SetAsideLog,
  foreignFiles: readonly string[],
  blocked: readonly BlockedFile[] = [],
  now: number = Date.now(),
): SpoolStatusView {
  const oldest = index.oldestAcceptedAt;
  const setAside: SetAsideView[] = [
    ...setAsideLog.recent().map((entry) => ({
      source: entry.source,
      reason: entry.reason,
      at: entry.at,
      sessionId: entry.sessionId ?? null,
      messageId: entry.messageId ?? null,
    })),
    ...foreignFiles.map((name) => ({
      source: name,
      reason: 'not a file of the journal: left untouched',
      at: null,
      sessionId: null,
      messageId: null,
    })),
  ];
  return {
    path,
    writable: error === null,
    error,
    messages: index.liveRecords,
    bytes: index.bytes,
    oldestAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    sessions: index.liveBySessions(),
    setAside,
    setAsideCount: setAsideLog.count + foreignFiles.length,
    blocked: blocked.map((file) => ({ ...file })),
  };
}
