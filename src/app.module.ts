import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { AuthModule } from './common/auth/auth.module.js';
import { ScribeGraphQL } from './graphql/scribe-graphql.js';
import { ScribeGraphQLModule } from './graphql/scribe-graphql.module.js';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { GraphQLModule } from '@nestjs/graphql';
import { ScribeConfigModule } from './config/scribe-config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { LiveModule } from './live/live.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { SessionModule } from './session/session.module.js';
import { SpoolModule } from './spool/spool.module.js';
import { SpoolDatabaseModule } from './spool-database.module.js';
import { TranscriptModule } from './transcript/transcript.module.js';

@Module({
  imports: [
    ScribeConfigModule,
    MetricsModule,
    EventEmitterModule.forRoot(),
    AuthModule,
    DatabaseModule,
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: ApolloDriver,
      imports: [ScribeGraphQLModule],
      inject: [ScribeGraphQL],
      useFactory: (graphql: ScribeGraphQL) => graphql.driverConfig('/graphql'),
    }),
    SessionModule,
    SpoolDatabaseModule,
    SpoolModule,
    TranscriptModule,
    LiveModule,
    HealthModule,
  ],
})
export class AppModule {}
