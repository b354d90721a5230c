import { Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { type Request, type Response } from 'express';
import { CapturingLogger } from '../testing/capturing-logger.js';
import { currentRequestId } from '../logging/request-context.js';
import {
  ACCESS_OPERATION_LIMIT,
  ACCESS_PATH_LIMIT,
  accessLine,
  noteOperation,
  requestIdOfResponse,
  requestTracing,
} from './request-tracing.js';

/** A request and its response as the middleware sees them: emitters, a header, locals. */
function exchange(headers: Record<string, string> = {}) {
  const request = Object.assign(new EventEmitter(), {
    headers,
    method: 'POST',
    originalUrl: '/graphql?token=secret',
  }) as unknown as Request;
  const sent: Record<string, string> = {};
  const response = Object.assign(new EventEmitter(), {
    locals: {},
    statusCode: 200,
    writableFinished: true,
    setHeader: (name: string, value: string) => (sent[name] = value),
  }) as unknown as Response;
  return { request, response, sent };
}

/** Runs `work` outside any request's async context, as a connection's events arrive. */
const outside = (work: () => void) =>
  new Promise<void>((resolve) =>
    setImmediate(() => {
      work();
      resolve();
    }),
  );

describe(requestTracing.name, () => {
  let logger: CapturingLogger;
  let clock: number;

  beforeEach(() => {
    logger = new CapturingLogger();
    clock = 1000;
  });

  const sut = (atLogLevel = false) => requestTracing({ atLogLevel, logger }, () => clock);

  it("keeps a caller's plain x-request-id, sends it back, and runs the rest as part of it", () => {
    const { request, response, sent } = exchange({ 'x-request-id': 'caller-id.1' });
    let seen: string | undefined;

    sut()(request, response, () => (seen = currentRequestId()));

    expect(sent['x-request-id']).toBe('caller-id.1');
    expect(requestIdOfResponse(response)).toBe('caller-id.1');
    expect(seen).toBe('caller-id.1');
    expect(currentRequestId()).toBeUndefined();
  });

  it.each(['', 'has space', 'x'.repeat(65), 'line\nbreak'])(
    'gives a new id in place of x-request-id %j',
    (given) => {
      const { request, response, sent } = exchange({ 'x-request-id': given });
      sut()(request, response, () => undefined);
      expect(sent['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    },
  );

  it("carries the id into what the request's events start later (its body arriving)", async () => {
    const { request, response } = exchange({ 'x-request-id': 'body-id' });
    let seen: string | undefined = 'none';
    sut()(request, response, () => request.on('end', () => (seen = currentRequestId())));

    await outside(() => request.emit('end'));

    expect(seen).toBe('body-id');
  });

  it('writes one access line when the request ends, at debug by default', async () => {
    const { request, response } = exchange({ 'x-request-id': 'acc-1' });
    sut()(request, response, () => undefined);
    noteOperation(response, 'AppendOne');
    clock = 1012.34;

    await outside(() => response.emit('close'));

    expect(logger.lines).toEqual([
      { level: 'debug', message: 'POST /graphql AppendOne 200 12.3 ms', params: [] },
    ]);
  });

  it('writes it at log with LOG_ACCESS=true, and names an aborted request', async () => {
    const { request, response } = exchange();
    Object.assign(response, { writableFinished: false });
    let requestId: string | undefined;
    logger.log = (message: unknown) => {
      requestId = currentRequestId();
      logger.lines.push({ level: 'log', message, params: [] });
    };
    sut(true)(request, response, () => undefined);

    await outside(() => response.emit('close'));

    expect(logger.messages('log')).toEqual(['POST /graphql - aborted 0.0 ms']);
    expect(requestId).toBe(requestIdOfResponse(response));
  });
});

describe(accessLine.name, () => {
  it("builds no access line when Nest's logger would drop it (debug off)", async () => {
    const reads: number[] = [];
    const { request, response } = exchange();
    const now = () => {
      reads.push(performance.now());
      return 0;
    };
    try {
      Logger.overrideLogger(['log']);
      requestTracing({ atLogLevel: false }, now)(request, response, () => undefined);
      await outside(() => response.emit('close'));
      // Read once, at the start: the line's duration was never worked out.
      expect(reads).toHaveLength(1);

      Logger.overrideLogger(['log', 'debug']);
      const second = exchange();
      requestTracing({ atLogLevel: false }, now)(second.request, second.response, () => undefined);
      await outside(() => second.response.emit('close'));
      expect(reads).toHaveLength(3);
    } finally {
      Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose', 'fatal']);
    }
  });

  it('leaves the query string out', () => {
    expect(accessLine({ method: 'GET', url: '/health?x=1' }, 503, undefined, 1.25)).toBe(
      'GET /health - 503 1.3 ms',
    );
  });

  it('keeps a path and an operation name at their limits whole', () => {
    const path = `/${'p'.repeat(ACCESS_PATH_LIMIT - 1)}`;
    const name = 'o'.repeat(ACCESS_OPERATION_LIMIT);
    expect(accessLine({ method: 'POST', url: path }, 200, name, 2)).toBe(
      `POST ${path} ${name} 200 2.0 ms`,
    );
  });

  it('cuts a longer path and operation name, and marks the cut', () => {
    const line = accessLine(
      { method: 'POST', url: `/${'p'.repeat(60_000)}?q=1` },
      200,
      'o'.repeat(60_000),
      2,
    );
    expect(line).toBe(
      `POST /${'p'.repeat(ACCESS_PATH_LIMIT - 1)}… ${'o'.repeat(ACCESS_OPERATION_LIMIT)}… 200 2.0 ms`,
    );
  });
});
