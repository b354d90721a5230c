import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { GraphQLModule } from '@nestjs/graphql';
import { type Request } from 'express';
import { formatGraphQLError } from './common/errors/graphql-error.util.js';
import { type GraphQLContext } from './common/graphql/graphql-context.js';
import { queryLimitsPlugin } from './common/graphql/query-limits.plugin.js';
import { createValidationPipe } from './common/validation/validation.pipe.js';
import { ScribeConfig } from './config/scribe-config.js';
import { ScribeConfigModule } from './config/scribe-config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { SessionModule } from './session/session.module.js';
import { SpoolModule } from './spool/spool.module.js';
import { TranscriptModule } from './transcript/transcript.module.js';

@Module({
  imports: [
    ScribeConfigModule,
    MetricsModule,
    EventEmitterModule.forRoot(),
    DatabaseModule,
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: ApolloDriver,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => ({
        path: '/graphql',
        autoSchemaFile: true,
        sortSchema: true,
        introspection: true,
        graphiql: config.development,
        includeStacktraceInErrorResponses: config.development,
        formatError: (formatted, error) => formatGraphQLError(formatted, error, config.development),
        plugins: [queryLimitsPlugin()],
        context: ({ req }: { req: Request }): GraphQLContext => ({ req }),
      }),
    }),
    SessionModule,
    SpoolModule,
    TranscriptModule,
    HealthModule,
  ],
  providers: [{ provide: APP_PIPE, useFactory: createValidationPipe }],
})
export class AppModule {}
