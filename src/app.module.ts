import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AuthFailureLog } from './common/auth/auth-failure-log.js';
import { AuthModule } from './common/auth/auth.module.js';
import { Authenticator } from './common/auth/authenticator.js';
import { fieldScopesPlugin } from './common/auth/field-scopes.plugin.js';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { GraphQLModule } from '@nestjs/graphql';
import { type Request } from 'express';
import { httpOperationsPlugin } from './common/graphql/http-operations.plugin.js';
import { errorLogPlugin } from './common/errors/error-log.plugin.js';
import { GraphQLExceptionFilter } from './common/errors/graphql-exception.filter.js';
import { formatGraphQLError } from './common/errors/graphql-error.util.js';
import { type GraphQLContext } from './common/graphql/graphql-context.js';
import { queryProtection } from './common/graphql/query-protection.js';
import { serialiseAnswer } from './common/graphql/answer-serialiser.js';
import { ResponseBudget } from './common/graphql/response-budget.js';
import { responseBudgetPlugin } from './common/graphql/response-budget.plugin.js';
import { BoundedSlots } from './common/concurrency/bounded-slots.js';
import { requestAbortSignal } from './common/http/request-abort-signal.js';
import { requestIdOf } from './common/http/request-id.js';
import { ScribeHttpModule } from './common/http/scribe-http.module.js';
import { MAX_TITLE_CHARACTERS } from './session/dto/update-session.input.js';
import { createValidationPipe } from './common/validation/validation.pipe.js';
import { ScribeConfig } from './config/scribe-config.js';
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
      inject: [ScribeConfig, AuthFailureLog, Authenticator],
      useFactory: (
        config: ScribeConfig,
        refusals: AuthFailureLog,
        authenticator: Authenticator,
      ) => {
        const protection = queryProtection(config.queryLimits);
        const limits = config.responseLimits;
        // Shared by every request: how many large answers are built at once.
        const largeAnswers = new BoundedSlots(limits.maxLarge, limits.slotTimeoutMs);
        const answers = responseBudgetPlugin(
          limits.maxBytes,
          {
            maxPageBytes: config.maxPageBytes,
            maxMessageBytes: config.maxMessageBytes,
            // Every character escaped as \uXXXX at worst.
            maxTitleBytes: MAX_TITLE_CHARACTERS * 6,
          },
          config.httpTimeouts,
        );
        return {
          path: '/graphql',
          // Apollo stops (and its drain ends every socket of the HTTP server) only once the
          // server has stopped taking requests and subscribers were told why (LiveSocketServer).
          stopOnApplicationShutdown: true,
          autoSchemaFile: true,
          sortSchema: true,
          introspection: config.introspection,
          // The IDE is served from npm packages, in development only (serveGraphqlIde).
          graphiql: false,
          includeStacktraceInErrorResponses: config.development,
          formatError: (formatted, error) =>
            formatGraphQLError(formatted, error, config.development),
          ...protection,
          stringifyResult: serialiseAnswer(),
          plugins: [
            errorLogPlugin(refusals),
            httpOperationsPlugin(),
            fieldScopesPlugin(authenticator),
            ...protection.plugins,
            answers,
          ],
          context: ({ req }: { req: Request }): GraphQLContext => {
            const requestId = requestIdOf(req);
            req.res?.setHeader('x-request-id', requestId);
            const budget = new ResponseBudget(limits, largeAnswers, requestAbortSignal(req));
            return { req, requestId, budget };
          },
        };
      },
    }),
    SessionModule,
    SpoolDatabaseModule,
    SpoolModule,
    TranscriptModule,
    LiveModule,
    HealthModule,
    ScribeHttpModule,
  ],
  providers: [
    { provide: APP_PIPE, useFactory: createValidationPipe },
    { provide: APP_FILTER, useClass: GraphQLExceptionFilter },
  ],
})
export class AppModule {}
