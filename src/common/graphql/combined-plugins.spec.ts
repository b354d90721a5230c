import { type ApolloServerPlugin, type GraphQLRequestListener } from '@apollo/server';
import { combinedPlugins } from './combined-plugins.js';

type Listener = GraphQLRequestListener<object>;
type Plugin = ApolloServerPlugin<object>;

const context = { request: {} } as never;
const pluginOf = (listener: Listener | undefined): Plugin => ({
  requestDidStart: () => Promise.resolve(listener ?? undefined),
});
const listenerOf = async (plugins: Plugin[]) =>
  (await plugins.at(-1)!.requestDidStart!(context)) as Listener;

describe(combinedPlugins.name, () => {
  it("keeps the server's hooks on their own plugins, in order, and one plugin for requests", async () => {
    const started: string[] = [];
    const a: Plugin = {
      serverWillStart: () => {
        started.push('a');
        return Promise.resolve();
      },
      requestDidStart: () => Promise.resolve({}),
    };
    const b: Plugin = { requestDidStart: () => Promise.resolve({}) };
    const c: Plugin = {
      serverWillStart: () => {
        started.push('c');
        return Promise.resolve();
      },
    };

    const sut = combinedPlugins([a, b, c]);

    expect(sut).toHaveLength(3);
    for (const plugin of sut.slice(0, 2)) {
      expect('requestDidStart' in plugin).toBe(false);
      await plugin.serverWillStart!({} as never);
    }
    expect(started).toEqual(['a', 'c']);
    expect(Object.keys(sut[2])).toEqual(['requestDidStart']);
    // Only the plugins with a request hook are asked for a listener.
    await expect(sut[2].requestDidStart!(context)).resolves.toEqual({});
  });

  it("calls every listener's hook in the plugins' order, before any is awaited", async () => {
    const calls: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const hook =
      (name: string, answer: Promise<void> = Promise.resolve()) =>
      (...args: unknown[]) => {
        calls.push(`${name}:${args.length}`);
        return answer;
      };
    const listener = await listenerOf(
      combinedPlugins([
        pluginOf({ didResolveOperation: hook('first', held) }),
        pluginOf(undefined),
        pluginOf({ willSendResponse: hook('only') }),
        pluginOf({ didResolveOperation: hook('second') }),
      ]),
    );

    let settled = false;
    const resolving = listener.didResolveOperation!(context).then(() => (settled = true));
    expect(calls).toEqual(['first:1', 'second:1']);
    await Promise.resolve();
    expect(settled).toBe(false);
    release();
    await resolving;
    expect(settled).toBe(true);

    await listener.willSendResponse!(context);
    expect(calls).toEqual(['first:1', 'second:1', 'only:1']);
    // Hooks no listener has are left out: Apollo calls nothing for them.
    expect(Object.keys(listener).sort()).toEqual(['didResolveOperation', 'willSendResponse']);
  });

  it('passes every argument on, and a rejection out as the hook rejecting', async () => {
    const seen: unknown[][] = [];
    const refusal = new Error('refused');
    const listener = await listenerOf(
      combinedPlugins([
        pluginOf({
          didEncounterSubsequentErrors: (...args) => {
            seen.push(args);
            return Promise.reject(refusal);
          },
        }),
        pluginOf({
          didEncounterSubsequentErrors: (...args) => {
            seen.push(args);
            return Promise.resolve();
          },
        }),
      ]),
    );

    await expect(listener.didEncounterSubsequentErrors!(context, ['e'] as never)).rejects.toBe(
      refusal,
    );
    expect(seen).toEqual([
      [context, ['e']],
      [context, ['e']],
    ]);
  });

  it("calls a listener's method, its prototype's too, on the listener", async () => {
    class Mine {
      readonly seen: string[] = [];
      constructor(private readonly name: string) {}
      didEncounterErrors(): Promise<void> {
        this.seen.push(this.name);
        return Promise.resolve();
      }
    }
    const listener = new Mine('mine');
    const other = { didEncounterErrors: () => Promise.resolve() };
    const combined = await listenerOf(combinedPlugins([pluginOf(listener), pluginOf(other)]));

    await combined.didEncounterErrors!(context);

    expect(listener.seen).toEqual(['mine']);
  });

  it('leaves one listener as it is, and none as none', async () => {
    const only: Listener = { executionDidStart: () => Promise.resolve() };
    expect(await listenerOf(combinedPlugins([pluginOf(only)]))).toBe(only);
    expect(await listenerOf(combinedPlugins([pluginOf(undefined)]))).toBeUndefined();
  });

  it('refuses a listener with a hook it cannot combine, naming it', async () => {
    const plugins = combinedPlugins([
      pluginOf({ didResolveOperation: () => Promise.resolve() }),
      pluginOf({ executionDidStart: () => Promise.resolve() }),
    ]);

    await expect(listenerOf(plugins)).rejects.toThrow(
      "combinedPlugins cannot combine a request listener's executionDidStart",
    );
  });
});
