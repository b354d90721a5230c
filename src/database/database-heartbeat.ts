import { type Unavailable, type Written } from '../message/outcomes.js';
import { type MessageStore } from './message-store.js';

/**
 * A commit of this instance's heartbeat row on the write connection, in turn with the writes:
 * whether a write can commit now (DatabaseHealth.check, for /health). The write path provides
 * it with its writer (TranscriptModule: the CoalescingWriter), so that the heartbeat queues
 * behind the writes under way instead of racing them; a host or a test may override it.
 */
export abstract class DatabaseHeartbeat {
  /** A write of nothing: `written` with nothing in it, or `unavailable`; never rejects. */
  abstract heartbeat(): Promise<Written | Unavailable>;
}

/**
 * The heartbeat straight on the message store: DatabaseModule's own when nothing provides a
 * DatabaseHeartbeat (a host of DatabaseModule without the write path). With no writer there
 * are no writes to queue behind, and the store's heartbeat is the same commit the writer's
 * runs, so /health still proves a commit goes through rather than only repeating status().
 */
export class StoreHeartbeat extends DatabaseHeartbeat {
  constructor(private readonly store: Pick<MessageStore, 'heartbeat'>) {
    super();
  }

  async heartbeat(): Promise<Written | Unavailable> {
    try {
      await this.store.heartbeat();
      return { kind: 'written', inserted: [], skipped: [], refused: [], revision: null };
    } catch (error) {
      return { kind: 'unavailable', error };
    }
  }
}
