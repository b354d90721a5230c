import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ScribeConfig } from '../config/scribe-config.js';
import { buildDataSourceOptions } from './data-source-options.js';
import { MessageEntity } from './entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { MessageStore } from './message-store.js';
import { SessionQueries } from './session-queries.js';
import { TypeOrmMessageStore } from './typeorm-message-store.js';

/** Connection settings TypeORM has no option for. SQLite runs on one connection, so once is enough. */
@Injectable()
export class SqliteSettings implements OnModuleInit {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: ScribeConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const database = this.config.database;
    if (database.kind !== 'sqlite') return;
    await this.dataSource.query(`PRAGMA synchronous = ${database.synchronous}`);
  }
}

/**
 * The only module that knows TypeORM and the drivers: it owns the connections, the schema and
 * its migrations, and offers the features two seams, the message store (writes) and the
 * session queries (reads).
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
    SqliteSettings,
    SessionQueries,
    { provide: MessageStore, useClass: TypeOrmMessageStore },
  ],
  exports: [SessionQueries, MessageStore],
})
export class DatabaseModule {}
