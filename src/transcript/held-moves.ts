import { Injectable } from '@nestjs/common';
import { KeyedReadWriteLock } from '../common/concurrency/keyed-mutex.js';

/**
 * The turns in which a session's held messages move: out of memory into the journal only (past
 * MAX_PENDING_PER_SESSION), or into the database and then out of memory and the journal (a
 * write-back's batch). A read that counts what is stored and lists what is held reads in the
 * same turns, so that it finds each message in one place: never in both (counted twice, as a
 * batch committed but not yet let go of would be), never in neither.
 *
 * Why not the session's lock (SessionBacklog.withSession): a write-back holds it through a whole
 * drain, thousands of messages long; a read waits here for one batch at most, and readers of a
 * session do not wait for each other.
 */
@Injectable()
export class HeldMoves {
  private readonly turns = new KeyedReadWriteLock();

  /** Moves held messages of the session: alone, after the reads under way. */
  move<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.turns.write(sessionId, work);
  }

  /** Reads what is held and stored of the session while none of its messages moves. */
  read<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.turns.read(sessionId, work);
  }
}
