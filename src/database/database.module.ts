import { Module } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { SQLITE_BUSY_TIMEOUT_MS, buildDataSourceOptions } from './data-source-options.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { CommitFeed, InProcessCommitFeed } from './commit-feed.js';
import { DatabaseIdentity, databaseLocation } from './database-identity.js';
import { DB_RETRY_INTERVAL_MS, SCRIBE_CONNECTION } from './database.tokens.js';
import { PostgresCommitFeed } from './postgres-commit-feed.js';
import { MessageStore } from './message-store.js';
import { PostgresMessageStore } from './postgres-message-store.js';
import { SessionDeletion, Tombstones } from './session-deletion.js';
import { StoredTimes } from './stored-times.js';
import { CommitReads } from './commit-reads.js';
import { DatabaseHealth } from './database-health.js';
import { databaseHealthProvider } from './database-health.provider.js';
import { DatabaseReadiness } from './database-readiness.js';
import { DatabaseStartup, FALLBACK_RETRY_INTERVAL_MS } from './database-startup.js';
import { ReadyMessageStore } from './ready-message-store.js';
import { migratingDataSource } from './schema-migrations.js';
import { SessionListQueries } from './session-list-queries.js';
import { MessageSearch } from './message-search.js';
import { SearchBackfill } from './search-backfill.js';
import { SessionQueries } from './session-queries.js';
import { SessionUpdates } from './session-updates.js';
import { MessageChanges } from './message-changes.js';
import { OwnTransactions } from './own-transactions.js';
import { SqliteMessageStore } from './sqlite-message-store.js';

/**
 * The only module that knows TypeORM and the drivers. TypeORM runs the migrations and serves
 * the reads (session queries); the message store writes through a connection of its own.
 * TypeORM builds the DataSource without connecting it: DatabaseStartup connects and migrates
 * it, in the background while the database is down, and every reader and writer refuses
 * (DatabaseNotReadyError, an outage) until then, so that an instance starts and journals
 * during an outage. The connection is named (SCRIBE_CONNECTION): a host app that imports
 * Scribe keeps its own default TypeORM connection.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      name: SCRIBE_CONNECTION,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => ({
        ...buildDataSourceOptions(config.database),
        manualInitialization: true,
      }),
    }),
    TypeOrmModule.forFeature([SessionEntity, MessageEntity], SCRIBE_CONNECTION),
  ],
  providers: [
    {
      provide: DB_RETRY_INTERVAL_MS,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => config.dbRetryIntervalMs,
    },
    {
      provide: DatabaseStartup,
      inject: [getDataSourceToken(SCRIBE_CONNECTION), ScribeConfig],
      useFactory: (dataSource: DataSource, config: ScribeConfig) =>
        new DatabaseStartup(migratingDataSource(dataSource), config.dbRetryIntervalMs),
    },
    { provide: DatabaseReadiness, useExisting: DatabaseStartup },
    databaseHealthProvider,
    SessionQueries,
    SessionListQueries,
    MessageSearch,
    {
      provide: SearchBackfill,
      inject: [getDataSourceToken(SCRIBE_CONNECTION), DatabaseReadiness],
      useFactory: (dataSource: DataSource, readiness: DatabaseReadiness) =>
        new SearchBackfill(dataSource, readiness),
    },
    SessionUpdates,
    MessageChanges,
    OwnTransactions,
    CommitReads,
    SessionDeletion,
    {
      provide: DatabaseIdentity,
      inject: [getDataSourceToken(SCRIBE_CONNECTION), ScribeConfig],
      useFactory: (dataSource: DataSource, config: ScribeConfig) =>
        new DatabaseIdentity(dataSource, databaseLocation(config.database)),
    },
    { provide: Tombstones, useExisting: SessionDeletion },
    StoredTimes,
    {
      provide: CommitFeed,
      inject: [ScribeConfig, SessionQueries, EventEmitter2, OrderKeyGenerator],
      useFactory: (
        config: ScribeConfig,
        queries: SessionQueries,
        events: EventEmitter2,
        clock: OrderKeyGenerator,
      ): CommitFeed =>
        config.database.kind === 'sqlite'
          ? new InProcessCommitFeed()
          : new PostgresCommitFeed(
              {
                url: config.database.url,
                // DB_RETRY_INTERVAL_MS=0 turns off the write path's retry, not listening again
                // (which would otherwise reconnect in a tight loop while PostgreSQL is down).
                retryIntervalMs: config.dbRetryIntervalMs || FALLBACK_RETRY_INTERVAL_MS,
                heartbeat: config.listenHeartbeat,
              },
              queries,
              events,
              clock,
            ),
    },
    {
      provide: MessageStore,
      inject: [ScribeConfig, ScribeInstance, DatabaseReadiness],
      useFactory: (
        { database }: ScribeConfig,
        instance: ScribeInstance,
        readiness: DatabaseReadiness,
      ): MessageStore =>
        new ReadyMessageStore(
          database.kind === 'sqlite'
            ? new SqliteMessageStore({
                path: database.path,
                synchronous: database.synchronous,
                busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
                instanceId: instance.id,
              })
            : new PostgresMessageStore({ url: database.url, instanceId: instance.id }),
          readiness,
        ),
    },
  ],
  exports: [
    DB_RETRY_INTERVAL_MS,
    DatabaseReadiness,
    DatabaseHealth,
    SessionQueries,
    SessionListQueries,
    MessageSearch,
    SearchBackfill,
    SessionUpdates,
    MessageChanges,
    CommitReads,
    SessionDeletion,
    Tombstones,
    StoredTimes,
    MessageStore,
    CommitFeed,
    DatabaseIdentity,
  ],
})
export class DatabaseModule {}
