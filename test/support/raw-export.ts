import { jest } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import net from 'node:net';
import { type Server } from 'node:http';
import { CapturingLogger } from '../../src/common/testing/capturing-logger.js';
import { deferred, type Deferred } from '../../src/common/testing/deferred.js';

/** An answer read to the end of its connection, its chunked body taken apart strictly. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body, de-chunked: as much of it as arrived. */
  body: Buffer;
  /** Whether the body ended with its last chunk: a transfer cut short does not. */
  complete: boolean;
}

/**
 * A GET on a raw connection (`Connection: close`, so the server closes it after the answer),
 * for what HTTP clients hide: a transfer cut short, and a client that stops reading.
 */
export class RawGet {
  readonly socket: net.Socket;
  readonly closed: Promise<void>;
  private chunks: Buffer[] = [];
  private waiting: { text: string; gate: Deferred }[] = [];

  constructor(port: number, path: string, headers: Record<string, string> = {}) {
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      const text = Buffer.concat(this.chunks).toString('latin1');
      this.waiting = this.waiting.filter(({ text: wanted, gate }) => {
        if (!text.includes(wanted)) return true;
        gate.resolve();
        return false;
      });
    });
    this.socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
    const lines = [
      `GET ${path} HTTP/1.1`,
      'Host: scribe.test',
      'Connection: close',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    this.socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  }

  /** Resolves once `text` (read as latin1: ASCII is enough) has arrived. */
  arrived(text: string): Promise<void> {
    if (Buffer.concat(this.chunks).toString('latin1').includes(text)) return Promise.resolve();
    const gate = deferred();
    this.waiting.push({ text, gate });
    return gate.promise;
  }

  /** Everything the server sent, once it has closed the connection. */
  async answer(): Promise<RawAnswer> {
    await this.closed;
    return parse(Buffer.concat(this.chunks));
  }
}

function parse(raw: Buffer): RawAnswer {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no answer head: ${JSON.stringify(raw.toString('latin1'))}`);
  const [statusLine, ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const rest = raw.subarray(split + 4);
  if (headers['transfer-encoding'] !== 'chunked') {
    return { status, headers, body: rest, complete: true };
  }
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
    if (size === 0) return { status, headers, body: Buffer.concat(parts), complete: true };
    const start = lineEnd + 2;
    parts.push(rest.subarray(start, Math.min(start + size, rest.length)));
    if (start + size + 2 > rest.length) break;
    at = start + size + 2;
  }
  return { status, headers, body: Buffer.concat(parts), complete: false };
}

/** The connections a server accepts, to find the server's side of a test's own client. */
export class AcceptedConnections {
  private readonly sockets: net.Socket[] = [];
  private readonly accepted = (socket: net.Socket) => void this.sockets.push(socket);

  constructor(private readonly server: Server) {
    server.on('connection', this.accepted);
  }

  /** The server's side of `client`'s connection (accepted once the client had an answer). */
  of(client: net.Socket): net.Socket {
    const found = this.sockets.find((socket) => socket.remotePort === client.localPort);
    if (!found) throw new Error(`no connection accepted from port ${client.localPort}`);
    return found;
  }

  stop(): void {
    this.server.off('connection', this.accepted);
  }
}

/**
 * The calls of `method` on `target`, each run by `implementation` (given the real method):
 * the test decides what each call does (hold it, fail it). Restored by `restore()`.
 */
export function interceptCalls<T extends object, K extends keyof T>(
  target: T,
  method: K,
  implementation: (
    call: number,
    real: (...args: unknown[]) => unknown,
    ...args: unknown[]
  ) => unknown,
): { calls: unknown[][]; restore: () => void } {
  const real = (target[method] as (...args: unknown[]) => unknown).bind(target);
  const calls: unknown[][] = [];
  const spy = jest.spyOn(target, method as never).mockImplementation(((...args: unknown[]) => {
    calls.push(args);
    return implementation(calls.length, real, ...args);
  }) as never);
  return { calls, restore: () => spy.mockRestore() };
}

/** Nest's log lines, kept for the test; `waitFor` resolves at the first line that matches. */
export class LogWatch extends CapturingLogger {
  private readonly previous: LoggerService;
  private waiting: { pattern: RegExp; gate: Deferred<string> }[] = [];

  constructor() {
    super();
    this.previous = (Logger as unknown as { staticInstanceRef: LoggerService }).staticInstanceRef;
    Logger.overrideLogger(this);
  }

  override debug(message: unknown, ...params: unknown[]): void {
    super.debug(message, ...params);
    this.heard(message);
  }

  override warn(message: unknown, ...params: unknown[]): void {
    super.warn(message, ...params);
    this.heard(message);
  }

  override log(message: unknown, ...params: unknown[]): void {
    super.log(message, ...params);
    this.heard(message);
  }

  waitFor(pattern: RegExp): Promise<string> {
    const seen = this.lines.map((line) => String(line.message)).find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    const gate = deferred<string>();
    this.waiting.push({ pattern, gate });
    return gate.promise;
  }

  restore(): void {
    Logger.overrideLogger(this.previous);
  }

  private heard(message: unknown): void {
    const text = String(message);
    this.waiting = this.waiting.filter(({ pattern, gate }) => {
      if (!pattern.test(text)) return true;
      gate.resolve(text);
      return false;
    });
  }
}
