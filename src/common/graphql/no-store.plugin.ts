import { type ApolloServerPlugin } from '@apollo/server';
import { type GraphQLContext } from './graphql-context.js';

/**
 * Every answer of Scribe's endpoint says `cache-control: no-store`: a transcript, a page of it
 * or a status is never to be kept by a cache between the client and Scribe. Apollo's
 * cache-control plugin said the same (Scribe gives no @cacheControl hints), but it wraps every
 * field's resolver to read hints, on each of the ~600 fields of a page of 100 messages; Scribe's
 * own endpoint turns it off (ApolloServerPluginCacheControlDisabled) and says it here instead.
 */
export function noStorePlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        willSendResponse: ({ response }) => {
          response.http.headers.set('cache-control', 'no-store');
          return Promise.resolve();
        },
      }),
  };
}
