import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Failpoints } from '../../common/failpoints.js';
import { ScribeConfig } from '../../config/scribe-config.js';
import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { writeFailure } from '../../database/database-errors.js';
import {
  MessageChanges,
  type MessageChange,
  type MessageEdit,
} from '../../database/message-changes.js';
import { MessageChanged } from '../../message/message-events.js';
import { type MessageRecord } from '../../message/message-record.js';
import { JournalIndex } from '../../spool/journal-index.js';
import { SpoolService } from '../../spool/spool.service.js';
import { SessionBacklog } from '../session-backlog.js';

/**
 * Edits and redactions of stored messages. They change the database only, never the journal:
 * a message still held (QUEUED, BUFFERED) is not changed until it is stored, since a change
 * made to the held copy would race its write-back, and one made in the database would be
 * overwritten by nothing (the write-back skips a stored id) but answered before it exists.
 *
 * A redaction first removes every copy the journal and the set-aside log may still hold of the
 * message (a segment stays on disk until everything in it is stored), then redacts the row: a
 * crash between the two leaves the message whole in the database and nowhere else, and the
 * client, unanswered, redacts again.
 */
@Injectable()
export class MessageEdits {
  constructor(
    private readonly changes: MessageChanges,
    private readonly backlog: SessionBacklog,
    private readonly index: JournalIndex,
    private readonly spool: SpoolService,
    private readonly events: EventEmitter2,
    private readonly failpoints: Failpoints,
    private readonly config: ScribeConfig,
  ) {}

  /** The message as the edit left it; a ScribeException saying why when it was not changed. */
  async edit(
    sessionId: string,
    id: string,
    edit: MessageEdit,
    expectedRevision: number | undefined,
  ): Promise<MessageRecord> {
    this.refuseHeld(sessionId, id);
    const change = await this.attempt(
      () =>
        this.changes.edit(
          sessionId,
          id,
          edit,
          expectedRevision,
          Date.now(),
          this.config.maxMessageBytes,
        ),
      `message ${id} was not edited`,
    );
    if (change.kind === 'too-large') {
      throw ScribeException.invalidInput(
        'input',
        `the message would hold ${change.bytes} bytes of content, toolCalls and metadata together; the limit is ${this.config.maxMessageBytes} bytes (MAX_MESSAGE_BYTES)`,
      );
    }
    if (change.kind === 'redacted') {
      throw new ScribeException(
        ScribeErrorCode.MessageRedacted,
        `input.id: message ${id} was redacted; it has nothing left to edit`,
        'input.id',
        unchangedToNonReaders(sessionId, id),
      );
    }
    if (change.kind === 'conflict') {
      throw new ScribeException(
        ScribeErrorCode.RevisionConflict,
        `input.expectedRevision: message ${id} is at revision ${change.record.revision ?? 1}, not ${expectedRevision}; nothing was changed. Read it again and retry.`,
        'input.expectedRevision',
        unchangedToNonReaders(sessionId, id),
      );
    }
    return this.changed(sessionId, id, change);
  }

  /** The tombstone the redaction left (or found: a second redaction changes nothing). */
  async redact(sessionId: string, id: string, reason: string): Promise<MessageRecord> {
    this.refuseHeld(sessionId, id);
    const stored = await this.attempt(
      () => this.changes.find(sessionId, id).then((record) => record ?? null),
      `message ${id} was not redacted`,
    );
    if (stored === null) this.notStored(sessionId, id);
    // Its copies on local disk go first (see the class's comment), on a second redaction too:
    // one that failed there before is finished by the next.
    this.failpoints.reach('redact.before-scrub');
    try {
      await this.spool.scrub([id]);
    } catch (error) {
      throw new ScribeException(
        ScribeErrorCode.JournalUnavailable,
        `Message ${id} was not redacted: a copy of it in the local journal could not be removed (${error instanceof Error ? error.message : String(error)}); retry`,
      );
    }
    this.failpoints.reach('redact.after-scrub');
    const change = await this.attempt(
      () => this.changes.redact(sessionId, id, reason, Date.now()),
      `message ${id} was not redacted`,
    );
    this.failpoints.reach('redact.after-commit');
    if (change.kind === 'redacted') return change.record;
    return this.changed(sessionId, id, change);
  }

  private changed(sessionId: string, id: string, change: MessageChange): MessageRecord {
    if (change.kind !== 'changed') return this.notStored(sessionId, id);
    this.events.emit(
      MessageChanged.event,
      new MessageChanged(change.record, change.sessionRevision),
    );
    return change.record;
  }

  /**
   * MESSAGE_HELD for a message this instance holds, stored or not yet: a copy held is written
   * back, and read on this instance, as it was accepted, so a change waits until it is let go.
   */
  private refuseHeld(sessionId: string, id: string): void {
    const held =
      this.backlog.of(sessionId).some(({ record }) => record.id === id) ||
      this.index.findJournalOnly(sessionId, id) !== undefined;
    if (held) {
      throw new ScribeException(
        ScribeErrorCode.MessageHeld,
        `input.id: message ${id} is held by this instance (QUEUED or BUFFERED) and not stored yet; it can be changed once it is PERSISTED`,
        'input.id',
      );
    }
  }

  /** MESSAGE_HELD for a message this instance holds, NOT_FOUND for one it knows nothing of. */
  private notStored(sessionId: string, id: string): never {
    this.refuseHeld(sessionId, id);
    throw new ScribeException(
      ScribeErrorCode.NotFound,
      `input.id: session ${JSON.stringify(sessionId)} has no stored message ${id}`,
      'input.id',
      unchangedToNonReaders(sessionId, id),
    );
  }

  private async attempt<T>(run: () => Promise<T>, what: string): Promise<T> {
    try {
      return await run();
    } catch (error) {
      // A connection lost as the change committed may have made it: the client is told so.
      throw writeFailure(
        error,
        `The database cannot be reached now, so ${what} (unless the connection dropped as it committed: read the message's revision before retrying)`,
      );
    }
  }
}

/**
 * What a caller without `read` is told of an edit that changed nothing, whatever the reason
 * (no such message, another revision, redacted): that its change was not made, and nothing of
 * what is stored, as updateSession tells such a caller.
 */
function unchangedToNonReaders(sessionId: string, id: string): ScribeException {
  return new ScribeException(
    ScribeErrorCode.NotFound,
    `input.id: message ${id} of session ${JSON.stringify(sessionId)} was not changed: it is not stored, or not at the revision expected`,
    'input.id',
  );
}
