import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { type DynamicModule } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { ScribeGraphQL } from '../../src/graphql/scribe-graphql.js';

/**
 * A host's GraphQLModule in 'host' mode: the host's options (`autoSchemaFile: true` unless
 * given) joined with Scribe's pieces by ScribeGraphQL.forHost, as the README shows a host.
 */
export function hostGraphQLModule(host: ApolloDriverConfig = {}): DynamicModule {
  return GraphQLModule.forRootAsync<ApolloDriverConfig>({
    driver: ApolloDriver,
    inject: [ScribeGraphQL],
    useFactory: (scribe: ScribeGraphQL) => scribe.forHost({ autoSchemaFile: true, ...host }),
  });
}
