import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Module,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OptionalFactoryDependency,
} from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { GraphQLModule } from '@nestjs/graphql';
import { AuthModule } from './common/auth/auth.module.js';
import { ScribeHttpModule } from './common/http/scribe-http.module.js';
import { ScribeConfig } from './config/scribe-config.js';
import { ScribeConfigModule } from './config/scribe-config.module.js';
import { InvalidScribeOptionsError } from './config/invalid-scribe-options.error.js';
import { type ScribeGraphQLMode, type ScribeOptions } from './config/scribe-options.js';
import { DatabaseModule } from './database/database.module.js';
import { ExportModule } from './export/export.module.js';
import { ImportModule } from './transcript/import/import.module.js';
import { ScribeGraphQL } from './graphql/scribe-graphql.js';
import { ScribeGraphQLModule } from './graphql/scribe-graphql.module.js';
import { HealthModule } from './health/health.module.js';
import { LiveModule } from './live/live.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { SessionModule } from './session/session.module.js';
import { SpoolModule } from './spool/spool.module.js';
import { ScribeCoreModule } from './scribe-core.module.js';
import { ScribeResolversModule } from './scribe-resolvers.module.js';
import { SpoolDatabaseModule } from './spool-database.module.js';
import { TranscriptModule } from './transcript/transcript.module.js';

/** ScribeModule.forRootAsync: the options from a factory, e.g. over the host's ConfigService. */
export interface ScribeModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  // Nest's own factory signature (FactoryProvider): the injected values' types are the host's.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  useFactory: (...args: any[]) => ScribeOptions | Promise<ScribeOptions>;
  /**
   * Who serves the GraphQL API. Given here rather than by the factory: it decides which
   * modules Scribe imports, which is settled before any factory runs. Default 'own'.
   */
  graphql?: { mode?: ScribeGraphQLMode };
}

/**
 * Scribe in a Nest app: its configuration, database, journal, write and read paths, live
 * subscriptions, /health and /metrics, and its HTTP protections, installed by the module on
 * its own routes. Its services are global (ScribeCoreModule), so that a host's providers inject
 * TranscriptService, SpoolService, SessionResolveGate and ScribeGraphQL without importing
 * anything more; its resolvers are not (ScribeResolversModule), so that a host's own endpoint
 * with `include` serves none of Scribe's fields.
 *
 * GraphQL is served in one of two ways: 'own' (default), an endpoint of Scribe's own at
 * `graphql.path`; or 'host', Scribe's resolvers joining the host's GraphQLModule, which takes
 * Scribe's pieces from ScribeGraphQL (see ScribeGraphQL.forHost).
 */
@Module({})
export class ScribeModule {
  /** Scribe configured by `options`; `{}` gives every default of `npm start`. */
  static forRoot(options: ScribeOptions = {}): DynamicModule {
    return ScribeModule.assemble(ScribeConfigModule.forRoot(options), options.graphql?.mode);
  }

  /** Scribe configured by a factory (its inject and imports, as TypeOrmModule.forRootAsync). */
  static forRootAsync(options: ScribeModuleAsyncOptions): DynamicModule {
    const { graphql, ...factory } = options;
    const mode = graphql?.mode;
    const config = ScribeConfigModule.forRootAsync({
      ...factory,
      useFactory: async (...args: unknown[]) => {
        const given = await options.useFactory(...args);
        // The modules were assembled for `mode` before the factory ran: a factory that says
        // another would have the HTTP front serve one mode and GraphQL the other.
        const assembled = mode ?? 'own';
        const said = (given as ScribeOptions | undefined)?.graphql?.mode;
        if (said !== undefined && said !== assembled) {
          throw new InvalidScribeOptionsError(
            'graphql.mode',
            `must be given to forRootAsync itself (forRootAsync({ graphql: { mode }, useFactory })), not by its factory: Scribe was assembled for '${assembled}' before the factory ran (got ${JSON.stringify(said)})`,
          );
        }
        return mode === undefined ? given : { ...given, graphql: { ...given.graphql, mode } };
      },
    });
    return ScribeModule.assemble(config, mode);
  }

  private static assemble(config: DynamicModule, mode: ScribeGraphQLMode = 'own'): DynamicModule {
    const ownEndpoint =
      mode === 'own'
        ? [
            GraphQLModule.forRootAsync<ApolloDriverConfig>({
              driver: ApolloDriver,
              imports: [ScribeGraphQLModule],
              inject: [ScribeGraphQL, ScribeConfig],
              useFactory: (graphql: ScribeGraphQL, scribe: ScribeConfig) => ({
                ...graphql.driverConfig(scribe.graphqlPath),
                // Scribe's resolvers only: a host's never land in it (nor do its checks judge them).
                include: [ScribeResolversModule],
              }),
            }),
          ]
        : [];
    const core: DynamicModule = {
      module: ScribeCoreModule,
      global: true,
      imports: [
        config,
        MetricsModule,
        EventEmitterModule.forRoot(),
        AuthModule,
        DatabaseModule,
        ScribeGraphQLModule,
        SessionModule,
        SpoolDatabaseModule,
        SpoolModule,
        TranscriptModule,
        LiveModule,
        HealthModule,
        ExportModule,
        ImportModule,
        ScribeHttpModule,
      ],
      exports: [ScribeGraphQLModule, SessionModule, SpoolModule, TranscriptModule],
    };
    return { module: ScribeModule, imports: [core, ScribeResolversModule, ...ownEndpoint] };
  }
}
