import { type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { type DatabaseReadiness } from './database-readiness.js';
import { MessageStore, type SessionWrite, type WrittenSession } from './message-store.js';

type Store = MessageStore & Partial<OnModuleInit & OnApplicationShutdown>;

/**
 * A message store that refuses every write and heartbeat (DatabaseNotReadyError, an outage)
 * until the database is connected and migrated: a table the code writes may not exist yet, or
 * lack a column. The write path then journals, and the background retry writes back once the
 * readiness says so. The store's own housekeeping at start waits for the migrations too.
 */
export class ReadyMessageStore extends MessageStore implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly store: Store,
    private readonly readiness: DatabaseReadiness,
  ) {
    super();
  }

  /** The store this one guards (a test asks it for its connection's settings). */
  get inner(): MessageStore {
    return this.store;
  }

  override get concurrentWrites(): number {
    return this.store.concurrentWrites;
  }

  // Not waited for: the database may be down for a long time, and the instance must start.
  onModuleInit(): void {
    void this.readiness.ready.then(async () => {
      await this.store.onModuleInit?.();
    });
  }

  async onApplicationShutdown(signal?: string): Promise<void> {
    await this.store.onApplicationShutdown?.(signal);
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    this.readiness.assertReady();
    return this.store.write(writes);
  }

  async heartbeat(): Promise<void> {
    this.readiness.assertReady();
    return this.store.heartbeat();
  }
}
