import { GraphQLError } from 'graphql';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { errorLogPlugin } from './error-log.plugin.js';
import { AuthFailureLog } from '../auth/auth-failure-log.js';
import { LogRateLimit } from './log-rate-limit.js';
import { ScribeErrorCode } from './scribe-error-code.js';
import { ScribeException } from './scribe.exception.js';

type Line = { level: string; message: string; stack?: unknown };

/** Runs the plugin's didEncounterErrors for one request from `ip` with `errors`. */
async function encounter(
  plugin: ReturnType<typeof errorLogPlugin>,
  errors: GraphQLError[],
  ip = '10.0.0.1',
): Promise<Record<string, unknown>> {
  const listener = await plugin.requestDidStart!({} as never);
  const locals: Record<string, unknown> = {};
  const contextValue = { req: { ip, res: { locals } } } as unknown as GraphQLContext;
  await listener!.didEncounterErrors!({ errors, contextValue } as never);
  return locals;
}

const resolverError = (originalError: Error, path = ['session']) =>
  new GraphQLError(originalError.message, { originalError, path });
const unauthenticated = () =>
  resolverError(new ScribeException(ScribeErrorCode.Unauthenticated, 'token needed'), [
    'pendingStatus',
  ]);

describe('errorLogPlugin', () => {
  let lines: Line[];
  let now: number;
  let plugin: ReturnType<typeof errorLogPlugin>;

  beforeEach(() => {
    lines = [];
    now = 0;
    const logger = {
      error: (message: string, stack?: unknown) =>
        void lines.push({ level: 'error', message, stack }),
      warn: (message: string) => void lines.push({ level: 'warn', message }),
      debug: (message: string) => void lines.push({ level: 'debug', message }),
    };
    const refusals = new AuthFailureLog(new LogRateLimit(60_000, 10, () => now), logger);
    plugin = errorLogPlugin(refusals, logger);
  });

  it('logs a fault of the server at ERROR with where it happened and its stack, once', async () => {
    const failure = new Error('database exploded');

    await encounter(plugin, [resolverError(failure, ['sessions'])]);

    expect(lines).toEqual([
      {
        level: 'error',
        message: 'Unhandled error at sessions: database exploded',
        stack: failure.stack,
      },
    ]);
  });

  it("logs a client's mistakes at debug, one line per request without a stack", async () => {
    await encounter(plugin, [
      resolverError(ScribeException.invalidInput('input.sessionId', 'bad'), ['appendMessage']),
      new GraphQLError('Cannot query field "nope" on type "Query".'),
    ]);

    expect(lines).toEqual([
      {
        level: 'debug',
        message: 'Refused appendMessage: input.sessionId: bad (2 errors in all)',
      },
    ]);
  });

  it('warns of refused tokens once per request, naming the source address', async () => {
    await encounter(plugin, [unauthenticated(), unauthenticated(), unauthenticated()]);

    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'Refused a request from 10.0.0.1: UNAUTHENTICATED: token needed',
      },
    ]);
  });

  it('warns at most once a minute per source, then says how many it held back', async () => {
    for (let i = 0; i < 50; i++) await encounter(plugin, [unauthenticated()]);
    await encounter(plugin, [unauthenticated()], '10.0.0.2');
    now += 60_000;
    await encounter(plugin, [unauthenticated()]);

    expect(lines.map((line) => line.message)).toEqual([
      'Refused a request from 10.0.0.1: UNAUTHENTICATED: token needed',
      'Refused a request from 10.0.0.2: UNAUTHENTICATED: token needed',
      'Refused a request from 10.0.0.1: UNAUTHENTICATED: token needed (49 more since the last line)',
    ]);
  });

  it('logs a fault beside refused tokens: neither hides the other', async () => {
    await encounter(plugin, [unauthenticated(), resolverError(new Error('boom'))]);

    expect(lines.map((line) => line.level).sort()).toEqual(['error', 'warn']);
  });

  it("charges what refuses the client to its source's refusal budget, and nothing else", async () => {
    expect(await encounter(plugin, [unauthenticated()])).toEqual({ scribeRefused: true });
    const mistake = resolverError(ScribeException.invalidInput('input.sessionId', 'bad'));
    expect(await encounter(plugin, [mistake])).toEqual({ scribeRefused: true });
    expect(await encounter(plugin, [new GraphQLError('Cannot query field "x"')])).toEqual({
      scribeRefused: true,
    });
    expect(await encounter(plugin, [resolverError(new Error('fault'))])).toEqual({});
    const busy = new ScribeException(ScribeErrorCode.SessionResolveTimeout, 'waited too long');
    expect(await encounter(plugin, [resolverError(busy)])).toEqual({});
  });
});
