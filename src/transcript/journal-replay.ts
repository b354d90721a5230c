import { Injectable } from '@nestjs/common';
import { type Progress, type RefusedRecord } from '../message/outcomes.js';
import { Journal } from '../spool/journal.js';
import { type JournaledRecord } from '../spool/journaled-record.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { HeldMoves } from './held-moves.js';
import { type Backlog } from './session-backlog.js';
import { StoredElsewhere } from './stored-elsewhere.js';
import { WriteReports } from './write-reports.js';

// Records per transaction when a session's backlog or journal is written back.
export const WRITE_BACK_CHUNK = 1000;

/**
 * The replay: stores what only the journal holds of a session, oldest first, a batch at a
 * time. The journal offers each batch and settles it once told what was stored; the replay
 * decides, so that calls run one way (the journal never calls the write path back). Runs
 * inside the session's lock, as part of DurableWriter.writeBack.
 */
@Injectable()
export class JournalReplay {
  constructor(
    private readonly writer: CoalescingWriter,
    private readonly journal: Journal,
    private readonly moves: HeldMoves,
    private readonly reports: WriteReports,
    private readonly elsewhere: StoredElsewhere,
  ) {}

  /**
   * Each record is let go of only once stored. Stopped at the first failure, or at a record
   * that must wait: it and all after it stay owed, in order.
   */
  async replay(backlog: Backlog): Promise<Progress> {
    for (;;) {
      const next = await this.journal.nextBatch(backlog.sessionId, WRITE_BACK_CHUNK);
      if (next.kind === 'done') return 'done';
      if (next.kind === 'unavailable') return 'stopped';
      // Stored and let go of in one move: a read sees a record owed or stored, never both.
      const replayed = await this.moves.move(backlog.sessionId, () =>
        this.replayBatch(backlog, next.records),
      );
      if (replayed === 'stopped' || next.waiting) return 'stopped';
    }
  }

  /** Stores a batch read back from the journal, then settles it there: stopped when it is kept. */
  private async replayBatch(backlog: Backlog, batch: JournaledRecord[]): Promise<Progress> {
    let refused: RefusedRecord[] = [];
    if (batch.length > 0) {
      try {
        const attempt = await this.writer.submit(
          { sessionId: backlog.sessionId, records: batch.map(({ record }) => record) },
          { isolateRefusals: true },
        );
        if (attempt.kind === 'unavailable') this.reports.failed(backlog, attempt.error, 0);
        if (attempt.kind !== 'written') return 'stopped';
        this.reports.stored(backlog.sessionId, attempt);
        const elsewhere = await this.elsewhere.refusals(backlog.sessionId, attempt.skipped);
        if (elsewhere === undefined) return 'stopped';
        refused = [...attempt.refused, ...elsewhere];
      } catch {
        return 'stopped';
      }
    }
    return (await this.journal.settle(batch, refused)).kind === 'settled' ? 'done' : 'stopped';
  }
}
