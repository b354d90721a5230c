import { Injectable } from '@nestjs/common';
import { SessionQueries } from '../database/session-queries.js';
import { messageIdFor } from '../message/message-id.js';
import { type MessageRecord, type NewMessage } from '../message/message-record.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { JournalIndex } from '../spool/journal-index.js';
import { Journal } from '../spool/journal.js';
import { SpoolService } from '../spool/spool.service.js';
import { RecordUnreadableError } from '../spool/record-unreadable.error.js';
import { AppendStatus } from '../message/append-status.js';
import { type BacklogEntry, type Backlog } from './session-backlog.js';

/** What one message of an append is answered with. */
export interface Answer {
  record: MessageRecord;
  status: AppendStatus;
}

/**
 * Idempotent retries: a client id seen before is answered with its first acceptance, wherever
 * that message is now (memory, the journal, the database), and an acceptance that lost a race
 * to a stored copy is answered with the stored one. Called under the session's lock. A lookup
 * only: it writes nothing (what a retry makes the writer do, see held).
 */
@Injectable()
export class RetryLookup {
  constructor(
    private readonly spool: SpoolService,
    private readonly index: JournalIndex,
    private readonly journal: Journal,
    private readonly queries: SessionQueries,
  ) {}

  /**
   * What this session holds in memory of the messages `ids`, in their order. A retry of one
   * held in memory only is journaled first, if the disk takes it (DurableWriter.journalRetried):
   * its answer then promises what the first one could not.
   */
  held(backlog: Backlog, ids: readonly string[]): BacklogEntry[] {
    const found = backlog.findAll(new Set(ids));
    return ids.flatMap((id) => found.get(id) ?? []);
  }

  /**
   * What earlier acceptances of these client ids got, wherever the message is now: in memory,
   * in the journal on disk, or stored.
   */
  async earlierAnswers(
    backlog: Backlog,
    inputs: readonly NewMessage[],
  ): Promise<Map<string, Answer>> {
    const answers = new Map<string, Answer>();
    const clientIds = inputs.flatMap((input) =>
      input.clientMessageId ? [input.clientMessageId] : [],
    );
    if (clientIds.length === 0) return answers;
    for (const clientId of clientIds) {
      const id = messageIdFor(backlog.sessionId, clientId);
      const held = await this.heldAnswer(
        backlog,
        backlog.find(id),
        id,
        `clientMessageId ${clientId}`,
      );
      if (held) answers.set(clientId, held);
    }
    const unanswered = clientIds.filter((clientId) => !answers.has(clientId));
    if (unanswered.length === 0) return answers;
    try {
      for (const record of await this.queries.findByClientMessageIds(
        backlog.sessionId,
        unanswered,
      )) {
        answers.set(record.clientMessageId as string, { record, status: AppendStatus.PERSISTED });
      }
    } catch {
      // Reads fail too (the database is unreachable): the id is derived from the client id, so
      // a message stored before comes back with its id, and the journal's replay skips it.
    }
    const unknown = clientIds.find((clientId) => !answers.has(clientId));
    // A journal file nobody could read yet may hold a first acceptance of this client id:
    // accepted afresh, the retry would be stored first and the original, with the same id,
    // skipped (its content lost). Until the file is read, such appends wait.
    if (unknown !== undefined && this.spool.owesUnread) {
      throw new ScribeException(
        ScribeErrorCode.JournalUnavailable,
        `clientMessageId ${unknown} may have been accepted before, in a journal file that cannot be read now (see spoolStatus.blocked); nothing was appended: retry later`,
      );
    }
    return answers;
  }

  /**
   * An import's lookup: what is known of each message id, wherever the message is: held by
   * this session (memory, the journal) or stored in it (`answers`), or stored in another
   * session (`elsewhere`: an id names one message). A database that cannot be read leaves the
   * stored ones unknown; the write then skips any it finds stored (see TranscriptImporter).
   */
  async earlierByIds(
    backlog: Backlog,
    ids: readonly string[],
  ): Promise<{ answers: Map<string, Answer>; elsewhere: Set<string> }> {
    const answers = new Map<string, Answer>();
    const elsewhere = new Set<string>();
    const inBacklog = backlog.findAll(new Set(ids));
    for (const id of ids) {
      const held = await this.heldAnswer(backlog, inBacklog.get(id), id, `id ${id}`);
      if (held) answers.set(id, held);
    }
    const unanswered = ids.filter((id) => !answers.has(id));
    if (unanswered.length === 0) return { answers, elsewhere };
    try {
      for (const record of await this.queries.findByIds(unanswered)) {
        if (record.sessionId === backlog.sessionId) {
          answers.set(record.id, { record, status: AppendStatus.PERSISTED });
        } else {
          elsewhere.add(record.id);
        }
      }
    } catch {
      // Unreadable now (an outage): imported afresh, a stored copy is skipped by its id.
    }
    const unknown = ids.find((id) => !answers.has(id) && !elsewhere.has(id));
    if (unknown !== undefined && this.spool.owesUnread) {
      throw new ScribeException(
        ScribeErrorCode.JournalUnavailable,
        `message id ${unknown} may have been accepted before, in a journal file that cannot be read now (see spoolStatus.blocked); nothing of this batch was imported: retry later`,
      );
    }
    return { answers, elsewhere };
  }

  /**
   * The answer of a message this session holds (`inBacklog` in memory, else on disk), or
   * undefined.
   */
  private async heldAnswer(
    backlog: Backlog,
    inBacklog: BacklogEntry | undefined,
    id: string,
    label: string,
  ): Promise<Answer | undefined> {
    if (inBacklog) {
      // A journaled one whose segment vanished (SPOOL_DIR replaced, a file deleted) is held in
      // memory only until the journal writes it again.
      const onDisk = inBacklog.location !== null && this.index.isOnDisk(inBacklog.location);
      const status = onDisk ? AppendStatus.QUEUED : AppendStatus.BUFFERED;
      return { record: inBacklog.record, status };
    }
    const onDisk = await this.findOnDisk(backlog.sessionId, id, label);
    return onDisk ? { record: onDisk, status: AppendStatus.QUEUED } : undefined;
  }

  /**
   * The journal's copy of an earlier acceptance. One in a file that cannot be read now is
   * refused, not taken for absent: accepted afresh it would get a new time and answer, and
   * nothing of the append runs.
   */
  private async findOnDisk(
    sessionId: string,
    id: string,
    label: string,
  ): Promise<MessageRecord | undefined> {
    try {
      return await this.journal.find(sessionId, id);
    } catch (error) {
      if (!(error instanceof RecordUnreadableError)) throw error;
      throw new ScribeException(
        ScribeErrorCode.JournalUnavailable,
        `${label} was accepted before, and that message is in a journal file that cannot be read now; nothing was appended: retry later`,
      );
    }
  }

  /** Replaces the answers of `skipped` records with what is stored; keeps them if unreadable. */
  async answerWithStored(
    sessionId: string,
    answers: Answer[],
    skipped: Set<string>,
  ): Promise<void> {
    const skippedAnswers = answers.filter((answer) => skipped.has(answer.record.id));
    let stored: MessageRecord[] = [];
    try {
      stored = await this.queries.findByClientMessageIds(
        sessionId,
        skippedAnswers.flatMap((answer) => answer.record.clientMessageId ?? []),
      );
    } catch {
      // The ids are derived from the client ids: our records carry the stored messages' ids.
    }
    for (const answer of skippedAnswers) {
      const found = stored.find(
        (record) => record.clientMessageId === answer.record.clientMessageId,
      );
      if (found) answer.record = found;
    }
  }
}
