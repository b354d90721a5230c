import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxy {
  /** The loopback port the proxy listens on. */
  readonly port: number;
  /** Connections accepted and forwarded so far (refused ones are not counted). */
  readonly forwarded: number;
  /** Connections refused while cut. */
  readonly refused: number;
  /** Destroys every open connection, and every new one until restore(): a network outage. */
  cut(): void;
  /** Forwards new connections again. */
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
  let isCut = false;
  let forwarded = 0;
  let refused = 0;

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
    forwarded += 1;
    const upstream = createConnection({ host: targetHost, port: targetPort });
    track(client);
    track(upstream);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
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
    restore() {
      isCut = false;
    },
    async close() {
      isCut = true;
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
