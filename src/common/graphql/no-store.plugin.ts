import { type ApolloServerPlugin } from '@apollo/server';
import { type GraphQLContext } from './graphql-context.js';

// What Apollo's cache-control plugin leaves alone: a header it cannot read as a policy (a
// persisted query's miss says `private, no-cache, must-revalidate`). It reads these two.
const READABLE = /^(max-age=\d+, (public|private)|no-store)$/;

/**
 * The cache-control header of every answer Apollo sends from Scribe's endpoint, as Apollo's
 * cache-control plugin set it for a schema without @cacheControl hints: `no-store`, over any
 * policy a plugin set before it (a field without a hint is uncacheable), but a header that is
 * no policy it reads is kept. That plugin wraps every field's resolver to read hints, on each
 * of the ~600 fields of a page of 100 messages; Scribe's own endpoint turns it off
 * (ApolloServerPluginCacheControlDisabled) and sets the header here. Answers refused before
 * Apollo (an HTTP step's, a body Apollo cannot read) never carried it, and do not.
 */
export function noStorePlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        willSendResponse: ({ response }) => {
          const set = response.http.headers.get('cache-control');
          if (set === undefined || READABLE.test(set)) {
            response.http.headers.set('cache-control', 'no-store');
          }
          return Promise.resolve();
        },
      }),
  };
}
