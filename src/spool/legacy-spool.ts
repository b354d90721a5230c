import { type MessageRecord } from '../message/message-record.js';
import { type Journal } from './journal.js';
import { type AdoptionReport } from './journal-adoption.js';
import { parseJournalMessage } from './journal-codec.js';
import { type JournalFiles } from './journal-files.js';

// Scribe 0.1 spooled one JSON file per message:
//   {"session_key", "reason", "ts", "seq", "data": {"session_id", "message": {…}}}
// with the message in the journal's own field names. Files of other reasons belong to other
// tools and are never touched.
const LEGACY_NAME = /^pending-.+\.json$/;
const LEGACY_REASONS: readonly string[] = ['transcript_cap_drop', 'shutdown'];

export function isLegacySpoolFile(name: string): boolean {
  return LEGACY_NAME.test(name);
}

/**
 * The message of a Scribe 0.1 spool file; null when the file is of a reason Scribe did not
 * own. Throws, with the first problem, when it is not a well-formed spool file.
 */
export function parseLegacySpoolFile(text: string): MessageRecord | null {
  const file = JSON.parse(text) as unknown;
  if (typeof file !== 'object' || file === null || Array.isArray(file)) {
    throw new Error('not a JSON object');
  }
  const { session_key: sessionKey, reason, data } = file as Record<string, unknown>;
  if (typeof reason !== 'string' || !LEGACY_REASONS.includes(reason)) return null;
  const { session_id: sessionId, message } = (data ?? {}) as Record<string, unknown>;
  if (sessionId !== sessionKey) throw new Error('data.session_id differs from session_key');
  return parseJournalMessage({ ...(message as object), sessionId });
}

/**
 * Journals the messages of Scribe 0.1's spool files found in the directory, then deletes the
 * files (an upgrade must not strand what the old version answered QUEUED), and returns them;
 * they are journal-only entries from then on, drained like any other. Malformed files stay where
 * they are (the status lists them as foreign); so does everything when the journal cannot be
 * written now (the next round tries again).
 */
export async function importLegacySpool(
  files: JournalFiles,
  journal: Journal,
): Promise<MessageRecord[]> {
  const found: { name: string; record: MessageRecord }[] = [];
  for (const name of (await files.list()).filter(isLegacySpoolFile)) {
    try {
      const record = parseLegacySpoolFile((await files.read(name)).toString('utf8'));
      if (record) found.push({ name, record });
    } catch {
      // Left in place.
    }
  }
  if (found.length === 0) return [];
  const records = found
    .map(({ record }) => record)
    .sort((left, right) =>
      left.orderKey < right.orderKey ? -1 : left.orderKey > right.orderKey ? 1 : 0,
    );
  const appended = await journal.append(records);
  if (appended.kind === 'unavailable') return [];
  await journal.release(
    records.map((record, index) => ({ record, location: appended.locations[index] })),
  );
  for (const { name } of found) await files.remove(name);
  return records;
}

/**
 * importLegacySpool, its records counted into `report` as adopted ones are (sessions to drain,
 * the newest acceptance time); resolves with how many there were.
 */
export async function addLegacySpool(
  report: AdoptionReport,
  files: JournalFiles,
  journal: Journal,
): Promise<number> {
  const legacy = await importLegacySpool(files, journal);
  report.records += legacy.length;
  report.sessions = [...new Set([...report.sessions, ...legacy.map((r) => r.sessionId)])];
  for (const record of legacy) {
    report.latestAcceptedAt = Math.max(report.latestAcceptedAt, record.acceptedAt);
  }
  return legacy.length;
}
