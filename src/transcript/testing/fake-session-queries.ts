import { type SessionQueries } from '../../database/session-queries.js';
import { type MessageRecord } from '../../message/message-record.js';
import { StoredElsewhere } from '../stored-elsewhere.js';
import { type FakeMessageStore } from './fake-message-store.js';

/** The one read the write path makes (a retry's lookup), over a fake store's rows. */
export class FakeSessionQueries implements Pick<
  SessionQueries,
  'findByClientMessageIds' | 'findByIds'
> {
  /** When set, reads fail with it (the database is unreachable for reads too). */
  readError: Error | null = null;
  /** The client ids of each lookup, in call order. */
  readonly lookedUp: string[][] = [];
  private afterLookup: (() => void) | undefined;

  constructor(private readonly store: FakeMessageStore) {}

  async findByClientMessageIds(
    sessionId: string,
    clientMessageIds: string[],
  ): Promise<MessageRecord[]> {
    return this.lookUp(
      clientMessageIds,
      (row) =>
        row.sessionId === sessionId &&
        row.clientMessageId !== null &&
        clientMessageIds.includes(row.clientMessageId),
    );
  }

  findByIds(ids: readonly string[]): Promise<MessageRecord[]> {
    return this.lookUp(ids, (row) => ids.includes(row.id));
  }

  private async lookUp(
    keys: readonly string[],
    matches: (row: MessageRecord) => boolean,
  ): Promise<MessageRecord[]> {
    this.lookedUp.push([...keys]);
    await Promise.resolve();
    const afterLookup = this.afterLookup;
    this.afterLookup = undefined;
    try {
      if (this.readError) throw this.readError;
      return this.store.rows.filter(matches);
    } finally {
      afterLookup?.();
    }
  }

  get lookups(): number {
    return this.lookedUp.length;
  }

  /** Runs `action` once the next lookup has answered: what another instance does meanwhile. */
  afterNextLookup(action: () => void): void {
    this.afterLookup = action;
  }

  /** This fake where the service expects the real one (it uses only the methods above). */
  get asQueries(): SessionQueries {
    return this as unknown as SessionQueries;
  }
}

/** The write-back's check of skipped ids (StoredElsewhere), over a fake store's rows. */
export function storedElsewhereOver(store: FakeMessageStore): StoredElsewhere {
  return new StoredElsewhere(new FakeSessionQueries(store).asQueries);
}
