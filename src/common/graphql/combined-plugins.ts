import {
  type ApolloServerPlugin,
  type BaseContext,
  type GraphQLRequestListener,
} from '@apollo/server';

/** The request hooks combined: each is called on every listener that has it, in order. */
const COMBINED_HOOKS = [
  'didResolveSource',
  'didResolveOperation',
  'didEncounterErrors',
  'willSendResponse',
  'didEncounterSubsequentErrors',
  'willSendSubsequentPayload',
] as const satisfies readonly (keyof GraphQLRequestListener<BaseContext>)[];

/** The others: each returns what Apollo reads (an end hook, a response), not combined here. */
const OTHER_HOOKS = [
  'parsingDidStart',
  'validationDidStart',
  'responseForOperation',
  'executionDidStart',
] as const satisfies readonly (keyof GraphQLRequestListener<BaseContext>)[];

type CombinedHook = (typeof COMBINED_HOOKS)[number];
type AnyHook = (...args: unknown[]) => Promise<unknown>;

/**
 * `plugins` as Apollo runs them, with one request listener for them all.
 *
 * Why: Apollo calls every hook of a request on every listener, whether it has the hook or not,
 * each call in a Promise.all of its own (eight hooks a request, more for some). With Scribe's
 * ten plugins that was over a hundred promises for `{ __typename }`, each also running Node
 * 20's AsyncLocalStorage hook (promiseInitHook alone was 4.2% of the main thread). Combined, a
 * hook is called on the listeners that have it, and Apollo awaits one promise for them all.
 *
 * The order and the outcome are Apollo's: every listener's hook is called, in the plugins'
 * order, before any is awaited; the first rejection is the hook's. Only hooks of that kind are
 * combined (COMBINED_HOOKS); a listener with another (parsingDidStart, executionDidStart,
 * responseForOperation) is refused at its request, loudly, rather than left out. Hooks of
 * the server (serverWillStart, ...) stay on their own plugins.
 */
export function combinedPlugins<TContext extends BaseContext>(
  plugins: readonly ApolloServerPlugin<TContext>[],
): ApolloServerPlugin<TContext>[] {
  const starters = plugins.filter((plugin) => plugin.requestDidStart !== undefined);
  const servers = plugins
    .map((plugin) => {
      const server = { ...plugin };
      delete server.requestDidStart;
      return server;
    })
    .filter((server) => Object.keys(server).length > 0);
  const requests: ApolloServerPlugin<TContext> = {
    requestDidStart: async (context) => {
      const started = starters.map((plugin) => plugin.requestDidStart!(context));
      const listeners = (await Promise.all(started)).filter(
        (listener): listener is GraphQLRequestListener<TContext> => listener !== undefined,
      );
      return combineListeners(listeners);
    },
  };
  return [...servers, requests];
}

function combineListeners<TContext extends BaseContext>(
  listeners: readonly GraphQLRequestListener<TContext>[],
): GraphQLRequestListener<TContext> | undefined {
  // One listener is Apollo's to call as it is, whatever its hooks.
  if (listeners.length <= 1) return listeners[0];
  for (const listener of listeners) refuseOtherHooks(listener);
  const combined: Partial<Record<CombinedHook, AnyHook>> = {};
  for (const name of COMBINED_HOOKS) {
    const having = listeners.filter((listener) => typeof listener[name] === 'function');
    // Apollo awaits what a hook returns and reads nothing of it: one listener's promise is
    // passed on as it is, several are awaited together. Each is called on its listener.
    if (having.length === 1) {
      const [only] = having;
      combined[name] = (...args: unknown[]) => (only[name] as AnyHook).apply(only, args);
    } else if (having.length > 1) {
      combined[name] = (...args: unknown[]) =>
        Promise.all(having.map((listener) => (listener[name] as AnyHook).apply(listener, args)));
    }
  }
  return combined as GraphQLRequestListener<TContext>;
}

/** Throws, naming the hook, when `listener` has a hook combinedPlugins does not combine. */
function refuseOtherHooks<TContext extends BaseContext>(
  listener: GraphQLRequestListener<TContext>,
): void {
  for (const name of OTHER_HOOKS) {
    if (typeof listener[name] === 'function') {
      throw new Error(`combinedPlugins cannot combine a request listener's ${name}`);
    }
  }
}
