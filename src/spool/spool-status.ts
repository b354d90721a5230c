import { describeError } from '../common/errors/describe-error.js';
import { type BlockedFile } from './blocked-files.js';
import { type IrregularEntry } from './journal-files.js';
import { SpoolDirectoryError } from './spool-directory.js';
import { type JournalIndex } from './journal-index.js';
import { type SetAsideLog } from './set-aside-log.js';

/** One thing the journal set aside or will not touch, with why. */
export interface SetAsideView {
  /** What re-drive and drop name it by; null for a foreign file (not in the log). */
  id: string | null;
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
  lostRecords: number;
  /** Records answered QUEUED whose segment vanished: memory only until journaled again. */
  buffered: number;
  /** Files owing records that cannot be used now (an outage, not corruption), with why. */
  blocked: BlockedFile[];
}

/** A file in the spool directory the journal leaves untouched, with why. */
export interface ForeignFile {
  name: string;
  reason: string;
}

/** Regular files that are not the journal's, and every entry that is not a regular file. */
export function foreignFilesOf(
  names: readonly string[],
  irregular: readonly IrregularEntry[],
): ForeignFile[] {
  return [
    ...names.map((name) => ({ name, reason: 'not a file of the journal: left untouched' })),
    ...irregular.map(({ name, kind }) => ({
      name,
      reason: `${kind}: not a regular file, left untouched (nothing in or behind it is read)`,
    })),
  ];
}

/**
 * Whether an append is journaled now, and what stands in the way. `checkJournal` rejects when
 * it is not (another database's spool, the lock, a vanished segment or swapped directory);
 * `checkFiles` when no new file could be begun in SPOOL_DIR. A directory that refuses new
 * segments (chmod 0500 in place) leaves the open, intact segment taking appends, synced, until
 * it is full: writable stays true, and the error says the directory is refused.
 */
export async function journalableNow(
  checkJournal: () => Promise<void>,
  checkFiles: () => Promise<void>,
  takesAppends: () => boolean,
): Promise<{ writable: boolean; error: string | null }> {
  try {
    await checkJournal();
  } catch (cause) {
    return { writable: false, error: describeError(cause) };
  }
  try {
    await checkFiles();
    return { writable: true, error: null };
  } catch (cause) {
    const writable = cause instanceof SpoolDirectoryError && takesAppends();
    return { writable, error: describeError(cause) };
  }
}

export function spoolStatusOf(
  path: string,
  error: string | null,
  index: JournalIndex,
  setAsideLog: SetAsideLog,
  foreignFiles: readonly ForeignFile[],
  blocked: readonly BlockedFile[] = [],
  now: number = Date.now(),
): SpoolStatusView {
  const oldest = index.oldestAcceptedAt;
  const setAside: SetAsideView[] = [
    ...setAsideLog.recentOpen().map(({ id, entry }) => ({
      id,
      source: entry.source,
      reason: entry.reason,
      at: entry.at,
      sessionId: entry.sessionId ?? null,
      messageId: entry.messageId ?? null,
    })),
    ...foreignFiles.map(({ name, reason }) => ({
      id: null,
      source: name,
      reason,
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
    lostRecords: index.lostRecords,
    buffered: index.orphanedRecords,
    blocked: blocked.map((file) => ({ ...file })),
  };
}
