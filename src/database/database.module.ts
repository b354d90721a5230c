import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ScribeConfig } from '../config/scribe-config.js';
import { buildDataSourceOptions } from './data-source-options.js';

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
  ],
  providers: [SqliteSettings],
})
export class DatabaseModule {}
