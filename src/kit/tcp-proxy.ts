import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxy {
  /** The loopback port the proxy listens on. */
  readonly port: number;
  /** Connections accepted and forwarded so far (refused and blackholed ones are not counted). */
  readonly forwarded: number;
  /** Connections refused while cut. */
  readonly refused: number;
  /** Destroys every open connection, and every new one until restore(): a network outage. */
  cut(): void;
  /**
   * Keeps every connection open, new ones too, but forwards nothing more until restore(): the
   * bytes either side sends are read and dropped, and neither side hears of the other closing
   * (a path that blackholes traffic without a reset).
   */
  blackhole(): void;
  /**
   * Forwards new connections again. Connections that were blackholed are destroyed: their
   * bytes were lost, so neither stream can go on (as a TCP connection whose retransmissions
   * ran out).
   */
  restore(): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

/**
 * A TCP forwarder on 127.0.0.1 (a free port) to `targetHost:targetPort`, in the test process,
 * that can cut the connection like a failing network or a restarting database server would.
 */
export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const silenced = new Set<Socket>();
  let isCut = false;
  let isBlackholed = false;
  let forwarded = 0;
  let refused = 0;

  /** Stops forwarding: what arrives is read and dropped, and the socket stays open. */
  const silence = (socket: Socket) => {
    if (silenced.has(socket)) return;
    silenced.add(socket);
    socket.once('close', () => silenced.delete(socket));
    socket.unpipe();
    socket.on('data', () => undefined);
    socket.resume();
  };

  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    // A reset from either side is the outage being simulated, not a test failure.
    socket.on('error', () => socket.destroy());
  };

  const server = createServer((client) => {
    if (isCut) {
      refused += 1;
      client.on('error', () => undefined);
      client.destroy();
      return;
    }
    track(client);
    if (isBlackholed) {
      // Accepted, and never answered: the upstream is not even dialled.
      silence(client);
      return;
    }
    forwarded += 1;
    const upstream = createConnection({ host: targetHost, port: targetPort });
    track(upstream);
    // A blackholed path carries no word of the other side closing either.
    client.once('close', () => silenced.has(upstream) || upstream.destroy());
    upstream.once('close', () => silenced.has(client) || client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    get forwarded() {
      return forwarded;
    },
    get refused() {
      return refused;
    },
    cut() {
      isCut = true;
      for (const socket of open) socket.destroy();
    },
    blackhole() {
      isBlackholed = true;
      for (const socket of open) silence(socket);
    },
    restore() {
      isCut = false;
      isBlackholed = false;
      for (const socket of [...silenced]) socket.destroy();
    },
    async close() {
      isCut = true;
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
