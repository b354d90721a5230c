import { EventEmitter } from 'node:events';
import { type Server } from 'node:http';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { RefusalBudget } from './refusal-budget.js';
import { applyServerDeadlines } from './server-deadlines.js';

const TIMEOUTS = {
  headersTimeoutMs: 2000,
  bodyTimeoutMs: 10_000,
  bodyMinBytesPerSecond: 65_536,
  keepAliveTimeoutMs: 5000,
  requestTimeoutMs: 300_000,
};

class FakeSocket {
  writable = true;
  remoteAddress: string | undefined = '192.0.2.1';
  written = '';
  destroyed = false;
  _httpMessage: { headersSent: boolean } | undefined;
  end(text: string, done: () => void) {
    this.written += text;
    done();
  }
  destroy() {
    this.destroyed = true;
  }
}

function harness(budget: RefusalBudget | undefined = new RefusalBudget(1, 100, () => 0)) {
  const server = new EventEmitter() as EventEmitter & Record<string, number>;
  const debug: string[] = [];
  applyServerDeadlines(server as unknown as Server, TIMEOUTS, budget, {
    debug: (line: string) => debug.push(line),
  });
  const clientError = (code: string, socket = new FakeSocket()) => {
    server.emit('clientError', Object.assign(new Error(code), { code }), socket);
    return socket;
  };
  return { server, clientError, budget, debug };
}

describe(applyServerDeadlines.name, () => {
  it("sets the server's deadlines, checked at a tenth of the head's", () => {
    const { server } = harness();
    expect({
      headersTimeout: server.headersTimeout,
      requestTimeout: server.requestTimeout,
      keepAliveTimeout: server.keepAliveTimeout,
      connectionsCheckingInterval: server.connectionsCheckingInterval,
    }).toEqual({
      headersTimeout: 2000,
      requestTimeout: 300_000,
      keepAliveTimeout: 5000,
      connectionsCheckingInterval: 200,
    });
  });

  it('answers a head cut at its deadline 408 REQUEST_TIMEOUT, closes, and charges the source', () => {
    const { clientError, budget } = harness();
    const socket = clientError('ERR_HTTP_REQUEST_TIMEOUT');
    const [head, body] = socket.written.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual([
      'HTTP/1.1 408 Request Timeout',
      'Connection: close',
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
    ]);
    expect(JSON.parse(body)).toEqual({
      errors: [
        {
          message: 'The request did not arrive in time (HEADERS_TIMEOUT_MS for its head)',
          extensions: { code: ScribeErrorCode.RequestTimeout },
        },
      ],
    });
    expect(socket.destroyed).toBe(true);
    expect(budget?.retryAfterSeconds('192.0.2.1')).toBe(60);
  });

  it.each([
    ['HPE_HEADER_OVERFLOW', 'HTTP/1.1 431 Request Header Fields Too Large'],
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request'],
  ])('answers %s with %s, coded BAD_REQUEST', (code, statusLine) => {
    const { clientError } = harness();
    const socket = clientError(code);
    expect(socket.written.startsWith(`${statusLine}\r\n`)).toBe(true);
    expect(JSON.parse(socket.written.split('\r\n\r\n')[1]).errors[0].extensions.code).toBe(
      ScribeErrorCode.BadRequest,
    );
  });

  it('says nothing to, and charges nothing for, a client that went away', () => {
    const { clientError, budget } = harness();
    const reset = clientError('ECONNRESET');
    const gone = new FakeSocket();
    gone.writable = false;
    clientError('ERR_HTTP_REQUEST_TIMEOUT', gone);
    expect([reset.written, gone.written]).toEqual(['', '']);
    expect([reset.destroyed, gone.destroyed]).toEqual([true, true]);
    expect(budget?.retryAfterSeconds('192.0.2.1')).toBe(0);
  });

  it('writes nothing into an answer already under way, but charges and closes', () => {
    const { clientError, budget } = harness();
    const socket = new FakeSocket();
    socket._httpMessage = { headersSent: true };
    clientError('ERR_HTTP_REQUEST_TIMEOUT', socket);
    expect(socket.written).toBe('');
    expect(socket.destroyed).toBe(true);
    expect(budget?.retryAfterSeconds('192.0.2.1')).toBe(60);
  });

  it('charges nobody without a budget (off, or behind a proxy) or an address', () => {
    const off = harness(undefined);
    expect(off.clientError('ERR_HTTP_REQUEST_TIMEOUT').written).toMatch(/^HTTP\/1\.1 408/);
    const { clientError, budget } = harness();
    const anonymous = new FakeSocket();
    anonymous.remoteAddress = undefined;
    clientError('ERR_HTTP_REQUEST_TIMEOUT', anonymous);
    expect(budget?.retryAfterSeconds('not-an-address')).toBe(0);
  });
});
