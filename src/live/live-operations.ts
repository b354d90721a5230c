import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import { type ServerOptions } from 'graphql-ws';
import { type Extra } from 'graphql-ws/use/ws';
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
import { ServedSchema } from '../common/graphql/served-schema.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { ConnectionGuard, closeReason, crossOrigin } from './connection-guard.js';
import { OpenConnections } from './open-connections.js';
import { SharedExecution } from './shared-execution.js';
import { checkSubscription } from './subscription-checks.js';

/** WebSocket close codes (4000-4999 are the application's; graphql-ws uses 4400-4500). */
const CLOSE_DUPLICATE_ID = 4409;
const CLOSE_RATE_LIMITED = 4429;

type Context = Parameters<
  NonNullable<ServerOptions<Record<string, unknown>, Extra>['onConnect']>
>[0];

/**
 * What happens on a live connection once graphql-ws speaks for it: the handlers of its
 * ServerOptions. A connection authenticates once (`connectionParams.authorization`, or the
 * upgrade's Authorization header); each operation is authenticated afresh and passes the HTTP
 * endpoint's limits; refused operations are charged to their source; errors carry the same
 * codes as HTTP's. Its own provider, apart from the socket server's lifecycle and upgrades
 * (LiveSocketServer), so that a host or a test can override the handlers alone.
 */
@Injectable()
export class LiveOperations {
  private readonly logger = new Logger('Subscriptions');
  private schemaHost: GraphQLSchemaHost | undefined;

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly served: ServedSchema,
    private readonly config: ScribeConfig,
    private readonly guard: ConnectionGuard,
    private readonly connections: OpenConnections,
    private readonly sharing: SharedExecution,
  ) {}

  /** graphql-ws's options; called once, at bootstrap, when every module's schema is built. */
  options(): ServerOptions<Record<string, unknown>, Extra> {
    // The schema Scribe's fields are served from (ServedSchema); failing that, the one GraphQL
    // module's (a host that serves Scribe's resolvers without Scribe's plugins).
    if (!this.served.schema)
      this.schemaHost = this.moduleRef.get(GraphQLSchemaHost, { strict: false });
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
      // Each live event executed once per distinct operation, not once per subscriber.
      subscribe: this.sharing.subscribe,
      // A stand-in request for each operation, so that each is authenticated afresh (an
      // expired token is refused) while the scope guard reads it as it reads HTTP's.
      context: (ctx): GraphQLContext => {
        const connection = this.connections.of(ctx.extra.socket);
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
        const connection = this.connections.of(ctx.extra.socket);
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
        this.connections.of(ctx.extra.socket).end(id);
        this.connections.settleIfDone();
      },
    };
  }

  private schema(): GraphQLSchema {
    const schema = this.served.schema ?? this.schemaHost?.schema;
    if (!schema) throw new Error("no GraphQL schema serves Scribe's fields");
    return schema;
  }

  /** Authenticates a connection once; a refusal closes it with the reason. */
  private async admit(ctx: Context): Promise<boolean> {
    const { request, socket } = ctx.extra;
    const connection = this.connections.of(socket);
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
    if (this.guard.charge(this.connections.of(ctx.extra.socket).source)) {
      ctx.extra.socket.close(
        CLOSE_RATE_LIMITED,
        'Too many refused requests from this address (MAX_REFUSALS_PER_MINUTE)',
      );
    }
    return errors;
  }
}

/** graphql-ws sends only GraphQLErrors; `format` finds the Scribe error inside. */
function asGraphQLError(error: ScribeException): GraphQLError {
  return new GraphQLError(error.message, { originalError: error });
}
