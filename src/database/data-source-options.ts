import sqlite3 from 'sqlite3';
import { type DataSourceOptions } from 'typeorm';
import { type DatabaseSettings } from '../config/scribe-config.js';
import { SessionEntity } from './entities/session.entity.js';
import { DeletedSessionEntity } from './entities/deleted-session.entity.js';
import { MessageEntity } from './entities/message.entity.js';
import { InitialSchema1764460800000 } from './migrations/1764460800000-initial-schema.js';
import { Heartbeat1764547200000 } from './migrations/1764547200000-heartbeat.js';
import { SessionMetadata1764633600000 } from './migrations/1764633600000-session-metadata.js';
import { DeletedSessions1764720000000 } from './migrations/1764720000000-deleted-sessions.js';
import { CommitSeq1764806400000 } from './migrations/1764806400000-commit-seq.js';
import { TCP_KEEPALIVE } from './postgres-keepalive.js';
import { StoredTimes1764892800000 } from './migrations/1764892800000-stored-times.js';
import { DatabaseIdentity1764979200000 } from './migrations/1764979200000-database-identity.js';
import { SessionIdPrefix1765065600000 } from './migrations/1765065600000-session-id-prefix.js';
import { MessageSearch1765152000000 } from './migrations/1765152000000-message-search.js';
import { MessageCreatedAt1765238400000 } from './migrations/1765238400000-message-created-at.js';
import { MessageChanges1765324800000 } from './migrations/1765324800000-message-changes.js';

export const ENTITIES = [SessionEntity, MessageEntity, DeletedSessionEntity];
export const MIGRATIONS = [
  InitialSchema1764460800000,
  Heartbeat1764547200000,
  SessionMetadata1764633600000,
  DeletedSessions1764720000000,
  CommitSeq1764806400000,
  StoredTimes1764892800000,
  DatabaseIdentity1764979200000,
  SessionIdPrefix1765065600000,
  MessageSearch1765152000000,
  MessageCreatedAt1765238400000,
  MessageChanges1765324800000,
];

/** How long one SQLite statement waits for another process's lock before failing. */
export const SQLITE_BUSY_TIMEOUT_MS = 1000;

// TypeORM calls `sqlite3.verbose()`, which wraps every call in a stack-capturing trace and
// roughly halves write throughput. Hand it a module whose `verbose()` changes nothing.
const quietSqlite3 = { ...sqlite3, verbose: () => sqlite3 };

export function buildDataSourceOptions(settings: DatabaseSettings): DataSourceOptions {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    // Run by DatabaseStartup (migratingDataSource), after refusing a schema newer than the code.
    migrationsRun: false,
    synchronize: false,
    logging: false,
  } as const;
  if (settings.kind === 'postgres') {
    return {
      ...common,
      type: 'postgres',
      url: settings.url,
      // Fail a write within seconds when the server is unreachable, instead of hanging.
      connectTimeoutMS: 3000,
      extra: { max: 10, query_timeout: 5000, ...TCP_KEEPALIVE },
    };
  }
  return {
    ...common,
    type: 'sqlite',
    database: settings.path,
    driver: quietSqlite3,
    enableWAL: true,
    busyTimeout: SQLITE_BUSY_TIMEOUT_MS,
  };
}
