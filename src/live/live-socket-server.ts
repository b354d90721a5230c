import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import { type ServerOptions } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { type IncomingMessage, type Server } from 'node:http';
import { type Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { arrivalAddress } from '../common/auth/local-address.js';
import { describeError } from '../common/errors/describe-error.js';
import {
  errorKind,
  formatGraphQLError,
  refusesClient,
} from '../common/errors/graphql-error.util.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { queryProtection } from '../common/graphql/query-protection.js';
import { requestIdOf } from '../common/http/request-id.js';
import { accessLine, bindToRequest } from '../common/http/request-tracing.js';
import { runWithRequestId } from '../common/logging/request-context.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ClientSocket } from './client-socket.js';
import { ConnectionGuard, closeReason, crossOrigin, refuseUpgrade } from './connection-guard.js';
import { LiveChannels } from './live-channels.js';
import { LiveConnection } from './live-connection.js';
import { SlotCounts } from './slot-counts.js';
import { ServedSchema } from '../common/graphql/served-schema.js';
import { PRINCIPAL_SLOTS } from './live.tokens.js';
import { checkSubscription } from './subscription-checks.js';

/** Room in a WebSocket message for the variables and framing around the query text. */
const MESSAGE_ROOM_BYTES = 16 * 1024;
/** How long a shutdown waits for subscribers to be told before it closes their sockets. */
const SHUTDOWN_NOTICE_MS = 2000;
/** WebSocket close codes (4000-4999 are the application's; graphql-ws uses 4400-4500). */
const CLOSE_GOING_AWAY = 1001;
const CLOSE_IDLE = 4000;
const CLOSE_INIT_TIMEOUT = 4408;
const CLOSE_DUPLICATE_ID = 4409;
const CLOSE_RATE_LIMITED = 4429;

type Context = Parameters<
  NonNullable<ServerOptions<Record<string, unknown>, Extra>['onConnect']>
>[0];

/**
 * Live subscriptions over graphql-ws on the API's own path. graphql-ws speaks the protocol;
 * this wires it into the HTTP server itself rather than through the GraphQL driver's
 * `subscriptions` option, whose WebSocket server takes any path, any number of connections and
 * messages of up to 100 MiB, and whose operations skip the checks every HTTP request passes.
 * Here who may connect is ConnectionGuard's; a connection authenticates once
 * (`connectionParams.authorization`, or the upgrade's Authorization header) and is closed when
 * its token expires or it has held no subscription for SUBSCRIPTION_IDLE_MS (LiveConnection,
 * which also holds its principal's slots); each operation is authenticated afresh and passes the HTTP endpoint's
 * limits; errors carry the same codes; a shutdown tells every subscriber why before it closes
 * their sockets.
 */
@Injectable()
export class LiveSocketServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Subscriptions');
  private readonly sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 0,
    WebSocket: ClientSocket,
  });
  private readonly connections = new WeakMap<WebSocket, LiveConnection>();
  /** Each upgrade's id, sent back on its 101 answer and carried by its log lines. */
  private readonly requestIds = new WeakMap<IncomingMessage, string>();
  private readonly access = new Logger('Access');
  private schemaHost: GraphQLSchemaHost | undefined;
  private dispose: (() => void | Promise<void>) | undefined;
  private server: Server | undefined;
  private closing = false;
  private settled: (() => void) | undefined;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly moduleRef: ModuleRef,
    private readonly served: ServedSchema,
    private readonly config: ScribeConfig,
    private readonly guard: ConnectionGuard,
    private readonly channels: LiveChannels,
    /** Every principal's running subscriptions on this instance. */
    @Inject(PRINCIPAL_SLOTS) private readonly principals: SlotCounts,
  ) {}

  onApplicationBootstrap(): void {
    // The schema Scribe's fields are served from (ServedSchema); failing that, the one GraphQL
    // module's (a host that serves Scribe's resolvers without Scribe's plugins).
    if (!this.served.schema)
      this.schemaHost = this.moduleRef.get(GraphQLSchemaHost, { strict: false });
    this.sockets.options.maxPayload = this.config.queryLimits.maxBytes + MESSAGE_ROOM_BYTES;
    this.sockets.on('headers', (headers: string[], request: IncomingMessage) => {
      const requestId = this.requestIds.get(request);
      if (requestId !== undefined) headers.push(`x-request-id: ${requestId}`);
    });
    this.dispose = useServer(
      this.serverOptions(),
      this.sockets,
      this.config.subscriptions.keepAliveMs,
    ).dispose;
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
      this.connections.set(client, connection);
      client.maxBufferedBytes = this.config.subscriptions.bufferBytes;
      this.guard.opened(source);
      client.once('close', (code) => {
        this.guard.closed(source, connection.acknowledged);
        connection.close();
        this.settleIfDone();
        // A connection that never said who it is spent a slot for nothing.
        if (code === CLOSE_INIT_TIMEOUT) this.guard.charge(source);
        const line = `${accessLine(request, 101, undefined, performance.now() - started)} (WebSocket closed ${code})`;
        if (this.config.accessLog) this.access.log(line);
        else this.access.debug(line);
      });
      this.sockets.emit('connection', client, request);
    });
  }

  private schema(): GraphQLSchema {
    const schema = this.served.schema ?? this.schemaHost?.schema;
    if (!schema) throw new Error("no GraphQL schema serves Scribe's fields");
    return schema;
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
      schema: () => this.schema(),
      // A stand-in request for each operation, so that each is authenticated afresh (an
      // expired token is refused) while the scope guard reads it as it reads HTTP's.
      context: (ctx): GraphQLContext => {
        const connection = this.connectionOf(ctx);
        return {
          req: {
            headers:
              connection.authorization === undefined
                ? {}
                : { authorization: connection.authorization },
            socket: ctx.extra.request.socket,
          } as unknown as GraphQLContext['req'],
        };
      },
      onConnect: (ctx) => this.admit(ctx),
      onSubscribe: (ctx, id, payload) => {
        const connection = this.connectionOf(ctx);
        const room = connection.room(id);
        if (room.kind === 'duplicate') {
          // graphql-ws forgets an id completed while it starts, and would run a second one
          // beside it that nothing ever ends.
          ctx.extra.socket.close(CLOSE_DUPLICATE_ID, `Subscriber for ${id} already exists`);
          return [
            new GraphQLError(`Subscriber for ${id} already exists`, {
              extensions: { code: ScribeErrorCode.BadRequest },
            }),
          ];
        }
        if (room.kind === 'full') {
          return this.refused(ctx, [
            asGraphQLError(new ScribeException(ScribeErrorCode.TooManySubscriptions, room.reason)),
          ]);
        }
        const checked = checkSubscription(
          this.schema(),
          payload,
          this.config.queryLimits,
          protection.validationRules,
          connection.caller,
        );
        if (Array.isArray(checked)) return this.refused(ctx, checked);
        // Nothing was awaited since `room`: the slot is there to take.
        connection.start(id);
        return checked;
      },
      onNext: (ctx, _id, _payload, _args, result) => {
        if (!result.errors) return undefined;
        if (result.errors.some(refusesClient)) this.refused(ctx, []);
        return { ...result, errors: result.errors.map(format) };
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(format),
      // After every subscription that started, whether it ran, failed or was stopped.
      onComplete: (ctx, id) => {
        this.connectionOf(ctx).end(id);
        this.settleIfDone();
      },
    };
  }

  /** Authenticates a connection once; a refusal closes it with the reason. */
  private async admit(ctx: Context): Promise<boolean> {
    const { request, socket } = ctx.extra;
    const connection = this.connectionOf(ctx);
    const params = ctx.connectionParams ?? {};
    const given = params.authorization ?? params.Authorization;
    const authorization = typeof given === 'string' ? given : request.headers.authorization;
    const admission = await this.guard.admit(
      connection.source,
      authorization,
      crossOrigin(request),
      arrivalAddress(request),
    );
    if (admission.kind === 'refused') {
      socket.close(admission.code, closeReason(admission.reason));
      return false;
    }
    // The socket may have closed while the credentials were checked: it holds nothing then.
    if (!connection.acknowledge(admission.principal, authorization)) return false;
    this.guard.acknowledged();
    return true;
  }

  /** Charges the source for refused operations; past its budget, the connection ends. */
  private refused(ctx: Context, errors: GraphQLError[]): GraphQLError[] {
    if (this.guard.charge(this.connectionOf(ctx).source)) {
      ctx.extra.socket.close(
        CLOSE_RATE_LIMITED,
        'Too many refused requests from this address (MAX_REFUSALS_PER_MINUTE)',
      );
    }
    return errors;
  }

  private connectionOf(ctx: Context): LiveConnection {
    return this.connections.get(ctx.extra.socket) as LiveConnection;
  }

  private settleIfDone(): void {
    if (this.principals.total === 0) this.settled?.();
  }

  /** Resolves once every subscription has ended, or after `ms`. */
  private allTold(ms: number): Promise<void> {
    if (this.principals.total === 0) return Promise.resolve();
    return within(ms, new Promise<void>((resolve) => (this.settled = resolve)));
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
