import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { useServer } from 'graphql-ws/use/ws';
import { type IncomingMessage, type Server } from 'node:http';
import { type Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { requestIdOf } from '../common/http/request-id.js';
import { accessLine, bindToRequest } from '../common/http/request-tracing.js';
import { runWithRequestId } from '../common/logging/request-context.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ClientSocket } from './client-socket.js';
import { ConnectionGuard, refuseUpgrade } from './connection-guard.js';
import { LiveChannels } from './live-channels.js';
import { LiveConnection } from './live-connection.js';
import { LiveOperations } from './live-operations.js';
import { PRINCIPAL_SLOTS } from './live.tokens.js';
import { OpenConnections } from './open-connections.js';
import { SlotCounts } from './slot-counts.js';
import { within } from './within.js';

/** Room in a WebSocket message for the variables and framing around the query text. */
const MESSAGE_ROOM_BYTES = 16 * 1024;
/** How long a shutdown waits for subscribers to be told before it closes their sockets. */
const SHUTDOWN_NOTICE_MS = 2000;
/** WebSocket close codes (4000-4999 are the application's; graphql-ws uses 4400-4500). */
const CLOSE_GOING_AWAY = 1001;
const CLOSE_IDLE = 4000;
const CLOSE_INIT_TIMEOUT = 4408;

/**
 * Live subscriptions over graphql-ws on the API's own path. graphql-ws speaks the protocol;
 * this wires it into the HTTP server itself rather than through the GraphQL driver's
 * `subscriptions` option, whose WebSocket server takes any path, any number of connections and
 * messages of up to 100 MiB, and whose operations skip the checks every HTTP request passes.
 * Here who may connect is ConnectionGuard's; a connection is closed when its token expires or
 * it has held no subscription for SUBSCRIPTION_IDLE_MS (LiveConnection, which also holds its
 * principal's slots); what its operations may do is LiveOperations'; a shutdown tells every
 * subscriber why before it closes their sockets.
 */
@Injectable()
export class LiveSocketServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 0,
    WebSocket: ClientSocket,
  });
  /** Each upgrade's id, sent back on its 101 answer and carried by its log lines. */
  private readonly requestIds = new WeakMap<IncomingMessage, string>();
  private readonly access = new Logger('Access');
  private dispose: (() => void | Promise<void>) | undefined;
  private server: Server | undefined;
  private closing = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly config: ScribeConfig,
    private readonly guard: ConnectionGuard,
    private readonly channels: LiveChannels,
    private readonly operations: LiveOperations,
    private readonly connections: OpenConnections,
    /** Every principal's running subscriptions on this instance. */
    @Inject(PRINCIPAL_SLOTS) private readonly principals: SlotCounts,
  ) {}

  onApplicationBootstrap(): void {
    // A standalone application context (a worker, a script) has no server to upgrade from.
    if (!this.adapterHost.httpAdapter) return;
    const options = this.operations.options();
    this.sockets.options.maxPayload = this.config.queryLimits.maxBytes + MESSAGE_ROOM_BYTES;
    this.sockets.on('headers', (headers: string[], request: IncomingMessage) => {
      const requestId = this.requestIds.get(request);
      if (requestId !== undefined) headers.push(`x-request-id: ${requestId}`);
    });
    this.dispose = useServer(options, this.sockets, this.config.subscriptions.keepAliveMs).dispose;
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    this.server = server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(request, socket, head),
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.channels.close(
      new ScribeException(
        ScribeErrorCode.ServiceUnavailable,
        'This Scribe instance is shutting down: subscribe again, with `after` set to the cursor of the last message received',
      ),
    );
    await this.connections.allEnded(SHUTDOWN_NOTICE_MS);
    const open = [...this.sockets.clients];
    for (const socket of open) {
      socket.close(CLOSE_GOING_AWAY, 'Scribe is shutting down; reconnect and resume with after');
    }
    // A client that does not answer the close is cut, rather than hold the shutdown.
    await within(
      SHUTDOWN_NOTICE_MS,
      Promise.all(open.map((socket) => new Promise((resolve) => socket.once('close', resolve)))),
    );
    for (const socket of this.sockets.clients) socket.terminate();
    await this.dispose?.();
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(request.url ?? '/', 'http://scribe').pathname;
    if (path !== this.config.graphqlPath) {
      // Another path's upgrade is the host's (its own WebSockets): left to its listeners, and
      // refused only when Scribe is the one listener there is.
      if (this.config.guardAllPaths || this.server?.listenerCount('upgrade') === 1) {
        refuseUpgrade(socket, { status: 404, text: 'Not Found' });
      }
      return;
    }
    // A connection is a request too: an id (x-request-id, else a new one) on its 101 answer and
    // on every line its messages cause, and an access line when it closes.
    const requestId = requestIdOf(request);
    this.requestIds.set(request, requestId);
    runWithRequestId(requestId, () => this.accept(request, socket, head, requestId));
  }

  private accept(request: IncomingMessage, socket: Duplex, head: Buffer, requestId: string): void {
    if (this.closing) return refuseUpgrade(socket, { status: 503, text: 'Service Unavailable' });
    const source = this.guard.sourceOf(request);
    const refusal = this.guard.refusal(source, this.sockets.clients.size);
    if (refusal) return refuseUpgrade(socket, refusal);
    const started = performance.now();
    this.sockets.handleUpgrade(request, socket, head, (client) => {
      bindToRequest(client, requestId);
      const connection = new LiveConnection(source, this.principals, {
        idleMs: this.config.subscriptions.idleMs,
        idle: () =>
          client.close(
            CLOSE_IDLE,
            `No subscription for ${this.config.subscriptions.idleMs} ms (SUBSCRIPTION_IDLE_MS); connect again to subscribe`,
          ),
        expired: () =>
          client.close(4401, 'The bearer token expired; connect again with a fresh one'),
      });
      this.connections.add(client, connection);
      client.maxBufferedBytes = this.config.subscriptions.bufferBytes;
      this.guard.opened(source);
      client.once('close', (code) => {
        this.guard.closed(source, connection.acknowledged);
        connection.close();
        this.connections.settleIfDone();
        // A connection that never said who it is spent a slot for nothing.
        if (code === CLOSE_INIT_TIMEOUT) this.guard.charge(source);
        const line = `${accessLine(request, 101, undefined, performance.now() - started)} (WebSocket closed ${code})`;
        if (this.config.accessLog) this.access.log(line);
        else this.access.debug(line);
      });
      this.sockets.emit('connection', client, request);
    });
  }
}
