import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from './common/auth/auth.module.js';
import { ScribeGraphQL } from './graphql/scribe-graphql.js';
import { ScribeGraphQLModule } from './graphql/scribe-graphql.module.js';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { GraphQLModule } from '@nestjs/graphql';
import {
  ScribeConfigModule,
  type ScribeConfigModuleAsyncOptions,
} from './config/scribe-config.module.js';
import { type ScribeOptions } from './config/scribe-options.js';
import { ScribeHttpModule } from './common/http/scribe-http.module.js';
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
    ScribeHttpModule,
  ],
})
export class AppModule {
  /** Scribe configured by `options` (`{}`: every default; see ScribeOptions). */
  static forRoot(options: ScribeOptions): DynamicModule {
    return { module: AppModule, imports: [ScribeConfigModule.forRoot(options)] };
  }

  /** Scribe configured by a factory, e.g. from the host's own ConfigService. */
  static forRootAsync(options: ScribeConfigModuleAsyncOptions): DynamicModule {
    return { module: AppModule, imports: [ScribeConfigModule.forRootAsync(options)] };
  }
}
