import { Module } from '@nestjs/common';
import { ServedSchema } from '../common/graphql/served-schema.js';
import { ScribeGraphQL } from './scribe-graphql.js';

/**
 * Provides ScribeGraphQL, for GraphQLModule.forRootAsync to inject (Scribe's own endpoint, or
 * a host's). Its dependencies (ScribeConfig, Authenticator, AuthFailureLog) are global.
 */
@Module({ providers: [ScribeGraphQL, ServedSchema], exports: [ScribeGraphQL, ServedSchema] })
export class ScribeGraphQLModule {}
