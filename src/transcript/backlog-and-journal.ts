import { Injectable } from '@nestjs/common';
import {
  HeldMessages,
  type JournalOnlyMessages,
  type KeyWindow,
  type HeldMessage,
} from '../message/held-messages.js';
import { JournalIndex } from '../spool/journal-index.js';
import { Journal } from '../spool/journal.js';
import { HeldMoves } from './held-moves.js';
import { SessionBacklog } from './session-backlog.js';

/**
 * What the read side sees of the write path: a session's messages held in memory (its
 * backlog), and the older ones that left memory past MAX_PENDING_PER_SESSION and that only
 * the journal holds, so that a read can list both in their places.
 */
@Injectable()
export class BacklogAndJournal extends HeldMessages {
  constructor(
    private readonly backlog: SessionBacklog,
    private readonly index: JournalIndex,
    private readonly journal: Journal,
    private readonly moves: HeldMoves,
  ) {
    super();
  }

  of(sessionId: string): HeldMessage[] {
    // A journaled message whose segment vanished is memory only until written again.
    return this.backlog.of(sessionId, (location) => this.index.isOnDisk(location));
  }

  inJournalOnly(sessionId: string): boolean {
    return this.index.hasJournalOnly(sessionId);
  }

  async journalOnly(
    sessionId: string,
    window: KeyWindow,
    maxBytes: number,
  ): Promise<JournalOnlyMessages> {
    // Most reads: nothing has left memory, and nothing is read from disk.
    if (!this.index.hasJournalOnly(sessionId))
      return { messages: [], beyondCursor: false, total: 0 };
    return this.journal.readWindow(sessionId, window, maxBytes);
  }

  atOneMoment<T>(sessionId: string, read: () => Promise<T>): Promise<T> {
    return this.moves.read(sessionId, read);
  }
}
