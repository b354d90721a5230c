import { Logger, type FactoryProvider } from '@nestjs/common';
import { DatabaseHealth } from './database-health.js';
import { DatabaseHeartbeat, StoreHeartbeat } from './database-heartbeat.js';
import { DatabaseReadiness } from './database-readiness.js';
import { DB_RETRY_INTERVAL_MS } from './database.tokens.js';
import { MessageStore } from './message-store.js';

/**
 * DatabaseModule's DatabaseHealth. Its heartbeat (check, for /health) is the write path's when
 * there is one (TranscriptModule provides a DatabaseHeartbeat, globally: its writer, so that the
 * heartbeat queues behind the writes); without the write path, the store's own (StoreHeartbeat).
 */
export const databaseHealthProvider: FactoryProvider<DatabaseHealth> = {
  provide: DatabaseHealth,
  inject: [
    DatabaseReadiness,
    DB_RETRY_INTERVAL_MS,
    MessageStore,
    { token: DatabaseHeartbeat, optional: true },
  ],
  useFactory: (
    readiness: DatabaseReadiness,
    retryIntervalMs: number,
    store: MessageStore,
    heartbeat: DatabaseHeartbeat | undefined,
  ) =>
    new DatabaseHealth(
      readiness,
      retryIntervalMs > 0,
      Date.now,
      new Logger(DatabaseHealth.name),
      heartbeat ?? new StoreHeartbeat(store),
    ),
};
