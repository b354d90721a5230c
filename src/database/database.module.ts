import { Module } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import { type DataSource } from 'typeorm';
import { ScribeConfig } from '../config/scribe-config.js';
import { ScribeInstance } from '../config/scribe-instance.js';
import { SQLITE_BUSY_TIMEOUT_MS, buildDataSourceOptions } from './data-source-options.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { CommitFeed, InProcessCommitFeed } from './commit-feed.js';
import { DatabaseIdentity, databaseLocation } from './database-identity.js';
import { PostgresCommitFeed } from './postgres-commit-feed.js';
import { MessageStore } from './message-store.js';
import { PostgresMessageStore } from './postgres-message-store.js';
import { SessionDeletion, Tombstones } from './session-deletion.js';
import { CommitReads } from './commit-reads.js';
import { SessionListQueries } from './session-list-queries.js';
import { SessionQueries } from './session-queries.js';
import { SessionUpdates } from './session-updates.js';
import { SqliteMessageStore } from './sqlite-message-store.js';

/**
 * The only module that knows TypeORM and the drivers. TypeORM runs the migrations and serves
 * the reads (session queries); the message store writes through a connection of its own.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => ({
        ...buildDataSourceOptions(config.database),
        retryAttempts: 3,
        retryDelay: 1000,
      }),
    }),
    TypeOrmModule.forFeature([SessionEntity, MessageEntity]),
  ],
  providers: [
    SessionQueries,
    SessionListQueries,
    SessionUpdates,
    CommitReads,
    SessionDeletion,
    {
      provide: DatabaseIdentity,
      inject: [getDataSourceToken(), ScribeConfig],
      useFactory: (dataSource: DataSource, config: ScribeConfig) =>
        new DatabaseIdentity(dataSource, databaseLocation(config.database)),
    },
    { provide: Tombstones, useExisting: SessionDeletion },
    {
      provide: CommitFeed,
      inject: [ScribeConfig, SessionQueries, EventEmitter2],
      useFactory: (
        config: ScribeConfig,
        queries: SessionQueries,
        events: EventEmitter2,
      ): CommitFeed =>
        config.database.kind === 'sqlite'
          ? new InProcessCommitFeed()
          : new PostgresCommitFeed(
              { url: config.database.url, retryIntervalMs: config.dbRetryIntervalMs },
              queries,
              events,
            ),
    },
    {
      provide: MessageStore,
      inject: [ScribeConfig, ScribeInstance],
      useFactory: ({ database }: ScribeConfig, instance: ScribeInstance): MessageStore =>
        database.kind === 'sqlite'
          ? new SqliteMessageStore({
              path: database.path,
              synchronous: database.synchronous,
              busyTimeoutMs: SQLITE_BUSY_TIMEOUT_MS,
              instanceId: instance.id,
            })
          : new PostgresMessageStore({ url: database.url, instanceId: instance.id }),
    },
  ],
  exports: [
    SessionQueries,
    SessionListQueries,
    SessionUpdates,
    CommitReads,
    SessionDeletion,
    Tombstones,
    MessageStore,
    CommitFeed,
    DatabaseIdentity,
  ],
})
export class DatabaseModule {}
