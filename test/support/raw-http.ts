import net from 'node:net';

/** What a server answered on a raw connection, and how the connection ended. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** The server ended or closed the connection (a FIN or a reset), after its answer. */
  closedByServer: boolean;
}

/**
 * A raw HTTP/1.1 connection, for what an HTTP client library hides: sending the head of a
 * request and holding its body back, sending slowly, or never finishing the head. `answer`
 * resolves once the server has answered and closed the connection, and rejects if it has not
 * by `deadlineMs` (a deadline, not a measurement).
 */
export class RawConnection {
  readonly socket: net.Socket;
  private received = Buffer.alloc(0);
  private readonly ended: Promise<void>;
  /** Set when a write failed because the server had closed the connection. */
  writeError: NodeJS.ErrnoException | undefined;
  private destroyedHere = false;

  constructor(url: string, localAddress?: string) {
    const { hostname, port } = new URL(url);
    this.socket = net.connect({ host: hostname, port: Number(port), localAddress });
    this.socket.on(
      'data',
      (chunk: Buffer) => (this.received = Buffer.concat([this.received, chunk])),
    );
    this.socket.on('error', (error: NodeJS.ErrnoException) => (this.writeError ??= error));
    this.ended = new Promise((resolve) => this.socket.once('close', () => resolve()));
  }

  /** Resolves once connected. */
  connected(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.socket.connecting) return resolve();
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
  }

  /** Writes `data`; resolves once the kernel took it (false if the connection is gone). */
  write(data: string | Buffer): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.socket.destroyed || !this.socket.writable) return resolve(false);
      this.socket.write(data, (error) => resolve(!error));
    });
  }

  /** The answer, once the server has closed the connection; rejects after `deadlineMs`. */
  async answer(deadlineMs = 10_000): Promise<RawAnswer> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const text = this.received.toString('utf8');
        reject(
          new Error(
            `no closed answer within ${deadlineMs} ms; received: ${JSON.stringify(text.slice(0, 300))}`,
          ),
        );
      }, deadlineMs);
    });
    try {
      await Promise.race([this.ended, deadline]);
    } finally {
      clearTimeout(timer);
    }
    return {
      ...parseAnswer(this.received.toString('latin1')),
      closedByServer: !this.destroyedHere,
    };
  }

  destroy(): void {
    this.destroyedHere = true;
    this.socket.destroy();
  }
}

/** The head of a POST /graphql, declaring `contentLength` bytes of JSON body. */
export function postHead(contentLength: number, headers: Record<string, string> = {}): string {
  const lines = [
    'POST /graphql HTTP/1.1',
    'Host: scribe.test',
    'Content-Type: application/json',
    `Content-Length: ${contentLength}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function parseAnswer(text: string): Omit<RawAnswer, 'closedByServer'> {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no complete answer: ${JSON.stringify(text.slice(0, 300))}`);
  const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  let raw = text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') raw = unchunk(raw);
  let body: unknown = raw;
  try {
    body = JSON.parse(Buffer.from(raw, 'latin1').toString('utf8'));
  } catch {
    // Not JSON: kept as text for the failure message.
  }
  return { status, headers, body };
}

function unchunk(raw: string): string {
  let out = '';
  let rest = raw;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (!(size > 0)) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 4 + size);
  }
}
