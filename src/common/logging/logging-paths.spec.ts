import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { GraphQLError } from 'graphql';
import { ScribeConfig } from '../../config/scribe-config.js';
import { AuthFailureLog } from '../auth/auth-failure-log.js';
import { Authenticator } from '../auth/authenticator.js';
import { errorLogPlugin } from '../errors/error-log.plugin.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { loggable, loggableStack, quoted } from './loggable.js';
import { SafeConsoleLogger } from './safe-console-logger.js';
import { captureOutput } from '../testing/captured-output.js';

/** What a client may send: a forged line, a terminal escape, NUL, C1 CSI, U+2028. */
const HOSTILE = 'a\r\n[Nest] 1 ERROR forged\x1b[31mred\x00nul\x9b1m\u2028sep';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/;

describe('loggable', () => {
  it('escapes C0 controls, DEL, C1 controls and the Unicode separators, keeping tab', () => {
    expect(loggable('a\rb\nc\x1bd\x00e\x7ff\x80g\x9fh\u2028i\u2029j\tk\x08\x0b\x1f')).toBe(
      'a\\x0db\\x0ac\\x1bd\\x00e\\x7ff\\x80g\\x9fh\\u2028i\\u2029j\tk\\x08\\x0b\\x1f',
    );
  });

  it('keeps printable text, other Unicode and surrogate pairs; escapes lone surrogates', () => {
    expect(loggable('plain ~ é \u00a0 \u2027 \u202a 😀')).toBe('plain ~ é \u00a0 \u2027 \u202a 😀');
    expect(loggable('x\ud83dy')).toBe('x\\ud83dy');
    expect(loggable('x\ude00y')).toBe('x\\ude00y');
    expect(loggable('\ude00\ud83d')).toBe('\\ude00\\ud83d');
    expect(loggable('end\ud83d')).toBe('end\\ud83d');
  });

  it('keeps a stack on its lines, indenting any that could pass for a line of its own', () => {
    expect(loggableStack('Error: a\rb\n    at f (x.js:1)\nforged line\x1b\n\tat g')).toBe(
      'Error: a\\x0db\n    at f (x.js:1)\n    forged line\\x1b\n\tat g',
    );
  });

  it('quotes a client value, escaping its quotes', () => {
    expect(quoted('say "hi"\n')).toBe('"say \\"hi\\"\\x0a"');
    expect(quoted(42)).toBe('"42"');
  });
});

describe('every logging path, through the logger main.ts installs', () => {
  let output: { text: () => string };

  beforeEach(() => {
    output = captureOutput();
    Logger.overrideLogger(new SafeConsoleLogger({ colors: false }));
  });

  afterEach(() => {
    jest.restoreAllMocks();
    Logger.overrideLogger(false);
  });

  /** Each entry output.text() is exactly one line, none holding a raw unsafe character. */
  const expectSafe = (entries: number) => {
    const lines = output.text().split('\n').slice(0, -1);
    expect(lines).toHaveLength(entries);
    expect(lines.filter((line) => RAW.test(line))).toEqual([]);
    expect(output.text()).toContain('forged\\x1b[31mred\\x00nul\\x9b1m\\u2028sep');
  };

  it.each(['log', 'warn', 'debug', 'verbose', 'fatal'] as const)('Logger.%s', (level) => {
    Logger.overrideLogger(new SafeConsoleLogger({ colors: false, logLevels: [level] }));
    new Logger('Test')[level](HOSTILE);
    expectSafe(1);
  });

  it('Logger.error, its stack on lines of its own that cannot pass for entries', () => {
    new Logger('Test').error(HOSTILE, `Error: ${HOSTILE}\n    at frame (file.js:1:1)`);
    // The message, then the stack's three lines (the forged one indented).
    const lines = output.text().split('\n').slice(0, -1);
    expect(lines).toHaveLength(4);
    expect(lines.slice(2)).toEqual([
      '    [Nest] 1 ERROR forged\\x1b[31mred\\x00nul\\x9b1m\\u2028sep',
      '    at frame (file.js:1:1)',
    ]);
    expect(lines.filter((line) => RAW.test(line))).toEqual([]);
  });

  it('AuthFailureLog, the WARN line of refused credentials', () => {
    new AuthFailureLog().refused('10.0.0.1', HOSTILE);
    expectSafe(1);
  });

  it('errorLogPlugin, a fault at ERROR with its stack and a refusal at debug', async () => {
    Logger.overrideLogger(new SafeConsoleLogger({ colors: false, logLevels: ['error', 'debug'] }));
    const plugin = errorLogPlugin({ refused: () => undefined });
    const listener = await plugin.requestDidStart!({} as never);
    const contextValue = {
      req: { ip: '10.0.0.1', res: { locals: {} } },
    } as unknown as GraphQLContext;
    const fault = new Error(HOSTILE);
    fault.stack = `Error: ${HOSTILE}`;
    await listener!.didEncounterErrors!({
      errors: [new GraphQLError(HOSTILE, { originalError: fault, path: ['session'] })],
      contextValue,
    } as never);
    await listener!.didEncounterErrors!({
      errors: [new GraphQLError(HOSTILE, { extensions: { code: ScribeErrorCode.BadUserInput } })],
      contextValue,
    } as never);
    // The fault's line, its stack's two lines, the refusal's line.
    expect(output.text().split('\n').slice(0, -1)).toHaveLength(4);
    expect(
      output
        .text()
        .split('\n')
        .filter((line) => RAW.test(line)),
    ).toEqual([]);
  });

  it('the refusal of a JWT whose payload is not JSON never holds its bytes', async () => {
    const header = Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url');
    const payload = Buffer.from(`x${HOSTILE}`).toString('base64url');
    const sut = new Authenticator(ScribeConfig.fromVariables({ JWT_SECRET: 'x'.repeat(32) }));
    const outcome = await sut.authenticate(`Bearer ${header}.${payload}.c2ln`);
    expect(outcome).toEqual({
      kind: 'refused',
      reason: 'The bearer JWT is not valid: its header or payload is not JSON',
    });
    // The verifier's own refusals keep their words.
    const wrong = new JwtService().sign({}, { secret: 'y'.repeat(32) });
    expect(await sut.authenticate(`Bearer ${wrong}`)).toEqual({
      kind: 'refused',
      reason: 'The bearer JWT is not valid: invalid signature',
    });
  });
});
