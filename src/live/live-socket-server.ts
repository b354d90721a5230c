import {
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { GraphQLError } from 'graphql';
import { type ServerOptions } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { type IncomingMessage, type Server } from 'node:http';
import { type Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { describeError } from '../common/errors/describe-error.js';
import { errorKind, formatGraphQLError } from '../common/errors/graphql-error.util.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { queryProtection } from '../common/graphql/query-protection.js';
import { sourceOf } from '../common/http/source-address.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ClientSocket } from './client-socket.js';
import { LiveChannels } from './live-channels.js';
import { checkSubscription } from './subscription-checks.js';

export const GRAPHQL_PATH = '/graphql';
/** Subscriptions one connection may hold: one client cannot take the instance's every slot. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;
/** Room in a WebSocket message for the variables and framing around the query text. */
const MESSAGE_ROOM_BYTES = 16 * 1024;
/** How long a shutdown waits for subscribers to be told before it closes their sockets. */
const SHUTDOWN_NOTICE_MS = 2000;
/** WebSocket close codes (4000-4999 are the application's; graphql-ws uses 4400-4500). */
const CLOSE_GOING_AWAY = 1001;
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_FORBIDDEN = 4403;

type Context = Parameters<
  NonNullable<ServerOptions<Record<string, unknown>, Extra>['onConnect']>
>[0];

/** What a connection's operations see as the request: its credentials, given once. */
type ConnectionRequest = GraphQLContext['req'];

/**
 * Live subscriptions over graphql-ws on the API's own path. graphql-ws speaks the protocol;
 * this wires it into the HTTP server itself rather than through the GraphQL driver's
 * `subscriptions` option, whose WebSocket server takes any path, any number of connections and
 * messages of up to 100 MiB, and whose operations skip the checks every HTTP request passes.
 * Here a connection authenticates once (`connectionParams.authorization`, or the upgrade's
 * Authorization header); each operation passes the HTTP endpoint's limits; errors carry the
 * same codes; a shutdown tells every subscriber why before it closes their sockets.
 */
@Injectable()
export class LiveSocketServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Subscriptions');
  private readonly sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 0,
    WebSocket: ClientSocket,
  });
  private readonly requests = new WeakMap<Extra, ConnectionRequest>();
  private readonly running = new Map<Context, Set<string>>();
  private schemaHost!: GraphQLSchemaHost;
  private dispose: (() => void | Promise<void>) | undefined;
  private closing = false;
  private settled: (() => void) | undefined;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly moduleRef: ModuleRef,
    private readonly config: ScribeConfig,
    private readonly authenticator: Authenticator,
    private readonly refusals: AuthFailureLog,
    private readonly channels: LiveChannels,
  ) {}

  onApplicationBootstrap(): void {
    // The GraphQL module's own provider, built with the schema before any module bootstraps.
    this.schemaHost = this.moduleRef.get(GraphQLSchemaHost, { strict: false });
    this.sockets.options.maxPayload = this.config.queryLimits.maxBytes + MESSAGE_ROOM_BYTES;
    this.dispose = useServer(
      this.serverOptions(),
      this.sockets,
      this.config.subscriptions.keepAliveMs,
    ).dispose;
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(request, socket, head),
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.channels.close(
      new ScribeException(
        ScribeErrorCode.ShuttingDown,
        'This Scribe instance is shutting down: subscribe again, with `after` set to the cursor of the last message received',
      ),
    );
    await this.allTold(SHUTDOWN_NOTICE_MS);
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

  /** Subscriptions running now, on every connection. */
  get subscriptionCount(): number {
    let count = 0;
    for (const ids of this.running.values()) count += ids.size;
    return count;
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(request.url ?? '/', 'http://scribe').pathname;
    if (path !== GRAPHQL_PATH) return refuseUpgrade(socket, 404, 'Not Found');
    if (this.closing) return refuseUpgrade(socket, 503, 'Service Unavailable');
    if (this.sockets.clients.size >= this.config.subscriptions.maxSubscriptions) {
      return refuseUpgrade(socket, 503, 'Service Unavailable');
    }
    this.sockets.handleUpgrade(request, socket, head, (connection) =>
      this.sockets.emit('connection', connection, request),
    );
  }

  private serverOptions(): ServerOptions<Record<string, unknown>, Extra> {
    const protection = queryProtection(this.config.queryLimits);
    const development = this.config.development;
    const format = (error: GraphQLError) => {
      // An error the stream threw (SLOW_CONSUMER, a shutdown) reaches here wrapped, without
      // the path a resolver's error has: the Scribe error inside decides the code.
      const inner = error.originalError instanceof ScribeException ? error.originalError : error;
      if (errorKind(inner) === 'fault') {
        this.logger.error(`Subscription failed: ${describeError(inner)}`, error.stack);
      }
      return formatGraphQLError(error.toJSON(), inner, development);
    };
    return {
      schema: () => this.schemaHost.schema,
      context: (ctx): GraphQLContext => ({
        req: this.requests.get(ctx.extra) as ConnectionRequest,
      }),
      onConnect: (ctx) => this.admit(ctx),
      onSubscribe: (ctx, id, payload) => {
        const ids = this.running.get(ctx) ?? new Set<string>();
        if (ids.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
          return [
            new ScribeException(
              ScribeErrorCode.TooManySubscriptions,
              `A connection may hold ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions at once`,
            ),
          ].map(asGraphQLError);
        }
        const checked = checkSubscription(
          this.schemaHost.schema,
          payload,
          this.config.queryLimits,
          protection.validationRules,
        );
        if (Array.isArray(checked)) return checked;
        ids.add(id);
        this.running.set(ctx, ids);
        return checked;
      },
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: result.errors.map(format) } : undefined,
      onError: (_ctx, _id, _payload, errors) => errors.map(format),
      onComplete: (ctx, id) => {
        const ids = this.running.get(ctx);
        ids?.delete(id);
        if (ids?.size === 0) this.running.delete(ctx);
        if (this.running.size === 0) this.settled?.();
      },
    };
  }

  /** Authenticates a connection once; a refusal closes it with the reason. */
  private async admit(ctx: Context): Promise<boolean> {
    const { request, socket } = ctx.extra;
    const params = ctx.connectionParams ?? {};
    const given = params.authorization ?? params.Authorization;
    const header = typeof given === 'string' ? given : request.headers.authorization;
    const outcome = await this.authenticator.authenticate(header);
    if (outcome.kind === 'refused') {
      this.refusals.refused(sourceOf(request as ConnectionRequest), outcome.reason);
      socket.close(CLOSE_UNAUTHORIZED, closeReason(outcome.reason));
      return false;
    }
    if (outcome.principal.anonymous && crossOrigin(request)) {
      // No CORS guards a WebSocket: any page a browser shows could open one. A page on another
      // origin must present a token, as over HTTP.
      socket.close(
        CLOSE_FORBIDDEN,
        'A page on another origin must send connectionParams.authorization',
      );
      return false;
    }
    // The scope guard authenticates each operation's caller through this stand-in, once.
    this.requests.set(ctx.extra, {
      headers: header === undefined ? {} : { authorization: header },
      socket: request.socket,
    } as unknown as ConnectionRequest);
    return true;
  }

  /** Resolves once every subscription has ended, or after `ms`. */
  private allTold(ms: number): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.settled = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** graphql-ws sends only GraphQLErrors; `format` finds the Scribe error inside. */
function asGraphQLError(error: ScribeException): GraphQLError {
  return new GraphQLError(error.message, { originalError: error });
}

/** Waits for `promise`, but no longer than `ms`. */
async function within(ms: number, promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function crossOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

/** A close reason fits in 123 bytes. */
function closeReason(reason: string): string {
  return Buffer.byteLength(reason) <= 123 ? reason : `${reason.slice(0, 110)}…`;
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
