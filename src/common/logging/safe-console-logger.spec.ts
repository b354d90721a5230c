import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { runWithRequestId } from './request-context.js';
import { SafeConsoleLogger } from './safe-console-logger.js';
import { captureOutput } from '../testing/captured-output.js';

/** What a client may send: a forged line, a terminal escape, NUL, DEL, C1 CSI, U+2028. */
const HOSTILE =
  'a\r\n[Scribe] 1 ERROR forged\x1b[31mred\x00nul\x7fdel\x9b1m\u2028sep\u2029par\ud800';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe(SafeConsoleLogger.name, () => {
  let output: { text: () => string };

  beforeEach(() => {
    output = captureOutput();
  });

  afterEach(() => {
    jest.restoreAllMocks();
    Logger.overrideLogger(false);
  });

  const lines = () => output.text().split('\n').slice(0, -1);

  describe('json', () => {
    beforeEach(() => Logger.overrideLogger(new SafeConsoleLogger({ json: true })));

    it('writes one object a line: ISO time, level, context, message, requestId', () => {
      new Logger('Spool').warn('outside any request');
      runWithRequestId('req-1', () => new Logger('Transcript').log('inside one'));

      const [outside, inside] = lines().map((line) => JSON.parse(line));
      expect(lines()).toHaveLength(2);
      expect(outside).toEqual({
        time: expect.stringMatching(ISO),
        level: 'warn',
        context: 'Spool',
        message: 'outside any request',
        requestId: null,
        pid: process.pid,
      });
      expect(Object.keys(outside)).toEqual([
        'time',
        'level',
        'context',
        'message',
        'requestId',
        'pid',
      ]);
      expect(inside).toMatchObject({ level: 'log', context: 'Transcript', requestId: 'req-1' });
    });

    it('keeps what a client sent exact, and every character that could break a line escaped', () => {
      runWithRequestId('req-2', () => new Logger('Test').error(HOSTILE, `Error: ${HOSTILE}`));

      expect(lines()).toHaveLength(1);
      expect(RAW.test(output.text().slice(0, -1))).toBe(false);
      const line = JSON.parse(lines()[0]);
      // JSON writes a lone surrogate as its escape, and reads it back as itself.
      expect(line.message).toBe(HOSTILE);
      expect(line.stack).toBe(`Error: ${HOSTILE}`);
      expect(line).toMatchObject({ level: 'error', requestId: 'req-2' });
    });
  });

  describe('text', () => {
    beforeEach(() => Logger.overrideLogger(new SafeConsoleLogger({ colors: false })));

    it('writes an ISO time and the request id, no colour codes', () => {
      runWithRequestId('req-3', () => new Logger('Access').log('POST /graphql'));
      new Logger('Scribe').log('started');

      expect(lines()).toEqual([
        expect.stringMatching(
          /^\[Scribe\] \d+ {2}- \d{4}-\d{2}-\d{2}T[\d:.]+Z {5}LOG \[Access\] \[request req-3\] POST \/graphql$/,
        ),
        expect.stringMatching(/ {5}LOG \[Scribe\] started$/),
      ]);
      expect(output.text()).not.toContain('\x1b');
    });

    it('keeps a hostile message on its line', () => {
      new Logger('Test').warn(HOSTILE);
      expect(lines()).toHaveLength(1);
      expect(RAW.test(lines()[0])).toBe(false);
    });
  });

  it("puts Nest's start-up lines at debug, not at the default level", () => {
    Logger.overrideLogger(new SafeConsoleLogger({ colors: false, logLevels: ['log'] }));
    for (const context of ['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory']) {
      new Logger(context).log('wiring');
    }
    new Logger('Scribe').log('kept');
    expect(lines()).toEqual([expect.stringMatching(/\[Scribe\] kept$/)]);

    Logger.overrideLogger(new SafeConsoleLogger({ colors: false, logLevels: ['debug'] }));
    new Logger('RoutesResolver').log('wiring');
    expect(lines()[1]).toMatch(/DEBUG \[RoutesResolver\] wiring$/);
  });
});
