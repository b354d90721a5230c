import { type DynamicModule } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule } from '@nestjs/graphql';
import { ScribeGraphQL } from '@scribe/server';
import { HostModule } from './host.module.js';

/** Where the host serves its own fields when Scribe owns /graphql ('own' mode). */
export const HOST_GRAPHQL_PATH = '/host/graphql';

/**
 * The host's GraphQLModule. In 'own' mode Scribe serves its API on its own endpoint, so the host
 * serves a second one, built from the host's modules only (`include`). In 'host' mode there is
 * one endpoint, the host's, and Scribe's resolvers join its code-first schema: ScribeGraphQL
 * (global, from ScribeModule) adds Scribe's plugins, context and error format, which judge
 * only the operations that select Scribe's fields, and keeps the path Scribe's (`graphql.path`).
 */
export function hostGraphql(mode: 'own' | 'host'): DynamicModule {
  if (mode === 'own') {
    return GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      path: HOST_GRAPHQL_PATH,
      include: [HostModule],
    });
  }
  return GraphQLModule.forRootAsync<ApolloDriverConfig>({
    driver: ApolloDriver,
    inject: [ScribeGraphQL],
    useFactory: (scribe: ScribeGraphQL) => scribe.forHost({ autoSchemaFile: true }),
  });
}
