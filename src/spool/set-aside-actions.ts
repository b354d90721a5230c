import { Injectable, Logger } from '@nestjs/common';
import { Mutex } from 'async-mutex';
import { describeError } from '../common/errors/describe-error.js';
import { type MessageRecord } from '../message/message-record.js';
import { decodeJournalLine, parseJournalMessage } from './journal-codec.js';
import { Journal } from './journal.js';
import { SetAsideLog } from './set-aside-log.js';
import { type OpenSetAside, type SetAsideEntry } from './set-aside-entry.js';
import { SpoolService } from './spool.service.js';

/** What a drop or re-drive of a set-aside entry came to. */
export type SetAsideActionOutcome =
  | { kind: 'done'; id: string; entry: SetAsideEntry }
  | { kind: 'not-found'; id: string }
  /** A re-drive of bytes that are still no record, or a record that is not a valid one. */
  | { kind: 'malformed'; id: string; reason: string }
  /** The journal or the log could not be written: nothing changed. */
  | { kind: 'unavailable'; id: string; reason: string };

/** The record a set-aside entry holds, or why it holds none that could be stored. */
export function recordOfEntry(
  entry: SetAsideEntry,
): { kind: 'record'; record: MessageRecord } | { kind: 'malformed'; reason: string } {
  if (entry.record !== undefined) {
    try {
      return { kind: 'record', record: parseJournalMessage(entry.record) };
    } catch (error) {
      return { kind: 'malformed', reason: `bad message: ${describeError(error)}` };
    }
  }
  const raw =
    entry.raw !== undefined
      ? Buffer.from(entry.raw, 'utf8')
      : entry.rawBase64 !== undefined
        ? Buffer.from(entry.rawBase64, 'base64')
        : undefined;
  if (raw === undefined) return { kind: 'malformed', reason: 'it holds no bytes of a record' };
  const line = raw.at(-1) === 0x0a ? raw.subarray(0, -1) : raw;
  const decoded = decodeJournalLine(line);
  if (decoded.kind === 'scrubbed') {
    return { kind: 'malformed', reason: 'it is the scrubbed line of a redacted message' };
  }
  return decoded.kind === 'record' ? decoded : { kind: 'malformed', reason: decoded.reason };
}

/**
 * An operator's two answers to a set-aside entry (the admin console's "Re-drive" and "Drop"):
 * put its record back into the journal for the write path to store, or close it for good. The
 * log keeps the entry's line either way, with a resolution line after it.
 */
@Injectable()
export class SetAsideActions {
  private readonly logger = new Logger(SetAsideActions.name);
  // One action at a time: two on one entry (a double click, a re-drive racing a drop) would
  // both find it open and both act; in turn, the second finds it closed (not-found).
  private readonly turn = new Mutex();

  constructor(
    private readonly log: SetAsideLog,
    private readonly spool: SpoolService,
    private readonly journal: Journal,
  ) {}

  /**
   * Journals the entry's record again, as a message owed to the database, and closes the entry;
   * then asks for a write-back now. Refused (malformed) when the entry holds no valid record.
   * A crash between the two steps leaves the entry open with its record journaled: a second
   * re-drive stores the same message id, which the database keeps once.
   */
  redrive(id: string): Promise<SetAsideActionOutcome> {
    return this.turn.runExclusive(() => this.redriveNow(id));
  }

  /** Closes the entry for good; the log line says why it was set aside, and that it was dropped. */
  drop(id: string): Promise<SetAsideActionOutcome> {
    return this.turn.runExclusive(() => this.dropNow(id));
  }

  private async redriveNow(id: string): Promise<SetAsideActionOutcome> {
    const open = await this.find(id);
    if (open.kind !== 'open') return open;
    const parsed = recordOfEntry(open.entry);
    if (parsed.kind === 'malformed') return { kind: 'malformed', id, reason: parsed.reason };
    const { record } = parsed;
    const appended = await this.spool.append([record]);
    if (appended.kind === 'unavailable') {
      return { kind: 'unavailable', id, reason: describeError(appended.error) };
    }
    // On disk only from now on: the write path drains it as it drains an adopted journal.
    await this.journal.release([{ record, location: appended.locations[0] }]);
    this.spool.retryNow();
    const closed = await this.close(id, 'redriven');
    if (closed) {
      // The record is journaled and will be stored: the re-drive is done, whatever the log
      // says. Its entry stays open; re-driving it again stores the same id, kept once.
      this.logger.warn(
        `Re-drove set-aside message ${record.id} of session ${record.sessionId} (entry ${id}), but could not close the entry (${closed.kind === 'unavailable' ? closed.reason : closed.kind}): it stays listed`,
      );
      return { kind: 'done', id, entry: open.entry };
    }
    this.logger.log(
      `Re-drove set-aside message ${record.id} of session ${record.sessionId} (entry ${id}); it was set aside because: ${open.entry.reason}`,
    );
    return { kind: 'done', id, entry: open.entry };
  }

  private async dropNow(id: string): Promise<SetAsideActionOutcome> {
    const open = await this.find(id);
    if (open.kind !== 'open') return open;
    const closed = await this.close(id, 'dropped');
    if (closed) return closed;
    const { entry } = open;
    const what = entry.messageId
      ? `message ${entry.messageId} of session ${entry.sessionId ?? 'unknown'}`
      : `bytes of ${entry.source}${entry.offset === undefined ? '' : ` at ${entry.offset}`}`;
    this.logger.warn(
      `Dropped set-aside entry ${id} (${what}) for good; it was set aside because: ${entry.reason}`,
    );
    return { kind: 'done', id, entry };
  }

  /** The open entry `id`, or the outcome that ends the action: none open, or no reading it. */
  private async find(
    id: string,
  ): Promise<({ kind: 'open' } & OpenSetAside) | SetAsideActionOutcome> {
    try {
      const open = await this.log.find(id);
      return open ? { kind: 'open', ...open } : { kind: 'not-found', id };
    } catch (error) {
      return { kind: 'unavailable', id, reason: describeError(error) };
    }
  }

  private async close(
    id: string,
    action: 'dropped' | 'redriven',
  ): Promise<SetAsideActionOutcome | undefined> {
    try {
      await this.log.resolve(id, action);
      return undefined;
    } catch (error) {
      return { kind: 'unavailable', id, reason: describeError(error) };
    }
  }
}
