import { Inject, Injectable, Logger } from '@nestjs/common';
import { EventEmitter2, OnEvent } from '@nestjs/event-emitter';
import { describeError } from '../common/errors/describe-error.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SessionDeletion, Tombstones } from '../database/session-deletion.js';
import { SessionDeleted } from '../message/message-events.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { type Progress } from '../message/outcomes.js';
import { Journal } from '../spool/journal.js';
import { SessionBacklog, type Backlog } from './session-backlog.js';

/** What deleteSession removed. */
export interface Erased {
  /** Whether the database held the session. */
  existed: boolean;
  /** Messages deleted from the database. */
  stored: number;
  /** Messages this instance held for the database (in memory or in its journal) and dropped. */
  held: number;
}

/**
 * Deletes a session everywhere its messages are: the database (which keeps a tombstone), what
 * this instance holds in memory and in its journal, and, told by the deletion's notice, what
 * other instances hold. It runs under the session's lock, so no append of the session is half
 * way through on this instance. A message accepted before the deletion that reaches the
 * database later anyway (a journal replayed after a crash, an instance that missed the notice)
 * is dropped by `prune`, which every write-back of a backlog runs first.
 */
@Injectable()
export class SessionEraser {
  private readonly logger = new Logger('SessionEraser');

  constructor(
    private readonly backlog: SessionBacklog,
    private readonly deletion: SessionDeletion,
    private readonly tombstones: Tombstones,
    private readonly journal: Journal,
    private readonly events: EventEmitter2,
    // The instance's clock (see OrderKeyGenerator): tombstones are stamped from it, and it is
    // moved past every tombstone read, so that a message accepted after a deletion is never
    // taken for one accepted before it, whatever the wall clock did.
    @Inject(OrderKeyGenerator) private readonly clock: Pick<OrderKeyGenerator, 'stamp' | 'floor'>,
    @Inject(MetricsService)
    private readonly metrics: Pick<MetricsService, 'messagesDroppedByDeletion'>,
  ) {}

  erase(sessionId: string): Promise<Erased> {
    return this.backlog.withSession(sessionId, async (backlog) => {
      // The database first: when it cannot delete, nothing is dropped here either.
      const rows = await this.deletion.delete(sessionId, this.clock.stamp());
      let held = 0;
      try {
        held = await this.dropHeld(backlog);
      } catch (error) {
        // Deleted all the same: prune() drops what is left when it is written back.
        this.logger.warn(
          `Deleted session ${sessionId}, but could not drop what is held of it yet: ${describeError(error)}`,
        );
      }
      this.events.emit(SessionDeleted.event, new SessionDeleted(sessionId));
      return { existed: rows.existed, stored: rows.messages, held };
    });
  }

  /** Another instance deleted it (or this one: then nothing is left to drop). */
  @OnEvent(SessionDeleted.event)
  async onSessionDeleted(event: SessionDeleted): Promise<void> {
    try {
      const held = await this.backlog.withSession(event.sessionId, async (backlog) => {
        // Another instance's clock may be ahead of this one: what is accepted here from now on
        // must be newer than its tombstone, or the next write-back would drop it.
        this.observe(await this.tombstones.deletedAt(event.sessionId).catch(() => undefined));
        return this.dropHeld(backlog);
      });
      if (held > 0) {
        this.logger.log(`Dropped ${held} held message(s) of deleted session ${event.sessionId}`);
      }
    } catch (error) {
      // prune() drops them when they are written back.
      this.logger.warn(
        `Could not drop what is held of deleted session ${event.sessionId}: ${describeError(error)}`,
      );
    }
  }

  /**
   * Drops what `backlog` and the journal hold of messages accepted before the session was last
   * deleted: done when the write-back may go on, stopped when the database cannot say (it then
   * fails as the write would). Not silently: those were answered QUEUED or BUFFERED (an
   * instance cut off from the database, its clock behind, accepted them after another deleted
   * the session), so each prune that drops some logs one WARN and counts them.
   */
  async prune(backlog: Backlog): Promise<Progress> {
    let deletedAt: number | undefined;
    try {
      deletedAt = await this.tombstones.deletedAt(backlog.sessionId);
    } catch {
      return 'stopped';
    }
    if (deletedAt === undefined) return 'done';
    this.observe(deletedAt);
    const held = backlog.peek(backlog.size);
    let stale = 0;
    while (stale < held.length && held[stale].record.acceptedAt <= deletedAt) stale += 1;
    await this.release(backlog.shift(stale));
    const forgotten = await this.journal.forget(backlog.sessionId, deletedAt);
    const dropped = stale + forgotten.count;
    if (dropped > 0) {
      const newest = held
        .slice(0, stale)
        .reduce(
          (latest, { record }) => Math.max(latest, record.acceptedAt),
          forgotten.newestAcceptedAt ?? Number.NEGATIVE_INFINITY,
        );
      this.metrics.messagesDroppedByDeletion.inc(dropped);
      this.logger.warn(
        `Dropped ${dropped} accepted message(s) of session ${backlog.sessionId} at write-back: accepted at or before its deletion at ${iso(deletedAt)} (the newest at ${iso(newest)}), they are not stored`,
      );
    }
    return 'done';
  }

  private observe(deletedAt: number | undefined): void {
    if (deletedAt !== undefined) this.clock.floor(deletedAt);
  }

  private async dropHeld(backlog: Backlog): Promise<number> {
    const entries = backlog.shift(backlog.size);
    await this.release(entries);
    return entries.length + (await this.journal.forget(backlog.sessionId)).count;
  }

  private release(entries: ReturnType<Backlog['shift']>): Promise<void> {
    return this.journal.resolve(
      entries.flatMap((entry) =>
        entry.location ? [{ record: entry.record, location: entry.location }] : [],
      ),
    );
  }
}

function iso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
