import { type ApolloServerPlugin } from '@apollo/server';
import { Injectable } from '@nestjs/common';
import { type GraphQLSchema } from 'graphql';

/**
 * The schema Scribe's fields are served from, as the Apollo server that serves them started
 * it: Scribe's own endpoint's, or a host's that took Scribe's plugins (ScribeGraphQL). The
 * WebSocket server executes subscriptions against this one: with a host's GraphQLModule beside
 * Scribe's there are two schema hosts in the app, and looking one up would find either.
 */
@Injectable()
export class ServedSchema {
  private current: GraphQLSchema | undefined;

  /** The schema, once a server with `plugin()` started; undefined before. */
  get schema(): GraphQLSchema | undefined {
    return this.current;
  }

  /** An Apollo plugin that records the schema its server starts with. */
  plugin(): ApolloServerPlugin {
    return {
      serverWillStart: ({ schema }) => {
        this.current = schema;
        return Promise.resolve();
      },
    };
  }
}
