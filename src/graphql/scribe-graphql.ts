import { type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable } from '@nestjs/common';
import { type Request } from 'express';
import { type GraphQLFormattedError } from 'graphql';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { fieldScopesPlugin } from '../common/auth/field-scopes.plugin.js';
import { BoundedSlots } from '../common/concurrency/bounded-slots.js';
import { errorLogPlugin } from '../common/errors/error-log.plugin.js';
import { formatGraphQLError, stoppedByTokenLimit } from '../common/errors/graphql-error.util.js';
import { requestAbortSignal } from '../common/http/request-abort-signal.js';
import { requestIdOf } from '../common/http/request-id.js';
import { requestIdOfResponse } from '../common/http/request-tracing.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { MAX_TITLE_CHARACTERS } from '../session/dto/update-session.input.js';
import { serialiseAnswer } from '../common/graphql/answer-serialiser.js';
import { claimRequestsPlugin } from '../common/graphql/claim-requests.plugin.js';
import { combinedPlugins } from '../common/graphql/combined-plugins.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { httpOperationsPlugin } from '../common/graphql/http-operations.plugin.js';
import { noStorePlugin } from '../common/graphql/no-store.plugin.js';
import { queryProtection } from '../common/graphql/query-protection.js';
import { ResponseBudget } from '../common/graphql/response-budget.js';
import { responseBudgetPlugin } from '../common/graphql/response-budget.plugin.js';
import { isScribeRefusal } from '../common/graphql/scribe-refusal.js';
import { ServedSchema } from '../common/graphql/served-schema.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { graphqlMetricsPlugin } from '../metrics/graphql-metrics.plugin.js';
import { MetricsService } from '../metrics/metrics.service.js';

/**
 * Scribe's part of a GraphQL server, in pieces: its Apollo plugins, what each request's
 * context holds, how errors are formatted, the bounds on a document, how an answer is written.
 * driverConfig assembles them for Scribe's own endpoint; a host that serves Scribe's resolvers
 * from its own GraphQLModule takes the pieces it needs. Built once: the slots for large answers
 * are shared by every request.
 */
@Injectable()
export class ScribeGraphQL {
  private readonly protection: ReturnType<typeof queryProtection>;
  /** 'host' mode's: the same bounds, on the operations that select Scribe's fields only. */
  private readonly hostProtection: ReturnType<typeof queryProtection>;
  private readonly largeAnswers: BoundedSlots;

  constructor(
    private readonly config: ScribeConfig,
    private readonly refusals: AuthFailureLog,
    private readonly authenticator: Authenticator,
    private readonly served: ServedSchema,
    private readonly metrics: MetricsService,
  ) {
    this.protection = queryProtection(config.queryLimits);
    this.hostProtection = queryProtection(config.queryLimits, 'scribe');
    const limits = config.responseLimits;
    this.largeAnswers = new BoundedSlots(limits.maxLarge, limits.slotTimeoutMs);
  }

  /**
   * Scribe's Apollo plugins, in their order, for Scribe's own endpoint: each judges Scribe's
   * fields only, and the bounds on a document bound every operation (forHost has its own).
   */
  plugins(): ApolloServerPlugin<GraphQLContext>[] {
    return combinedPlugins([...this.pluginsWith(this.protection), noStorePlugin()]);
  }

  private pluginsWith(
    protection: ReturnType<typeof queryProtection>,
  ): ApolloServerPlugin<GraphQLContext>[] {
    const config = this.config;
    const answers = responseBudgetPlugin(
      config.responseLimits.maxBytes,
      {
        maxPageBytes: config.maxPageBytes,
        maxMessageBytes: config.maxMessageBytes,
        // Every character escaped as \uXXXX at worst.
        maxTitleBytes: MAX_TITLE_CHARACTERS * 6,
      },
      config.httpTimeouts,
    );
    return [
      this.served.plugin(),
      graphqlMetricsPlugin(this.metrics),
      errorLogPlugin(this.refusals),
      httpOperationsPlugin(),
      fieldScopesPlugin(this.authenticator),
      ...(protection.plugins as ApolloServerPlugin<GraphQLContext>[]),
      answers,
    ];
  }

  /**
   * What Scribe's resolvers need in a request's context: the request, its id (also sent back
   * as `x-request-id`), and the budget its answer is built within.
   */
  context(req: Request): GraphQLContext {
    // Given by requestTracing, first on the request; on a host's path it may not have run.
    let requestId = requestIdOfResponse(req.res);
    if (requestId === undefined) {
      requestId = requestIdOf(req);
      req.res?.setHeader('x-request-id', requestId);
    }
    const budget = new ResponseBudget(this.config.responseLimits, this.largeAnswers, () =>
      requestAbortSignal(req),
    );
    return { req, requestId, budget };
  }

  /** Apollo's formatError: Scribe's codes, and nothing of a fault's internals. */
  readonly formatError = (formatted: GraphQLFormattedError, error: unknown) =>
    formatGraphQLError(formatted, error, this.config.development);

  /**
   * The bounds checked while a document is parsed and validated (its tokens, aliases, ...), on
   * Scribe's own endpoint; on a host's they are checked later, by forHost's plugins.
   */
  queryProtection(): Pick<ApolloDriverConfig, 'parseOptions' | 'validationRules'> {
    return {
      parseOptions: this.protection.parseOptions,
      validationRules: this.protection.validationRules,
    };
  }

  /** Writes an answer without blocking the event loop on a large one. */
  stringifyResult(): NonNullable<ApolloDriverConfig['stringifyResult']> {
    return serialiseAnswer();
  }

  /** The whole configuration of Scribe's own endpoint at `path`. */
  driverConfig(path = '/graphql'): ApolloDriverConfig {
    const config = this.config;
    return {
      driver: ApolloDriver,
      path,
      // Apollo stops (and its drain ends every socket of the HTTP server) only once the
      // server has stopped taking requests and subscribers were told why (LiveSocketServer).
      stopOnApplicationShutdown: true,
      autoSchemaFile: true,
      sortSchema: true,
      introspection: config.introspection,
      // The IDE is served from npm packages, in development only (serveGraphqlIde).
      graphiql: false,
      includeStacktraceInErrorResponses: config.development,
      formatError: this.formatError,
      ...this.queryProtection(),
      stringifyResult: this.stringifyResult(),
      // No-store without Apollo's cache-control plugin and its wrapper on every field (see
      // noStorePlugin); a host's endpoint keeps Apollo's default. Nor Apollo's inline traces,
      // which only a federated subgraph's schema turns on, but which costs every request.
      plugins: [
        ...this.plugins(),
        ApolloServerPluginCacheControlDisabled(),
        ApolloServerPluginInlineTraceDisabled(),
      ],
      context: ({ req }: { req: Request }): GraphQLContext => this.context(req),
    };
  }

  /**
   * For 'host' mode: the host's GraphQLModule options with Scribe's pieces joined in, so that
   * Scribe's fields keep Scribe's checks on the host's endpoint. Scribe's plugins run first, a
   * request's context carries Scribe's part beside the host's, the host's validation rules are
   * kept as given, and an error Scribe raised (a resolver's, or one of its refusals) is
   * formatted as Scribe formats it (the host's formatError, or none, formats the rest). The
   * path must be Scribe's `graphql.path`, in full: Scribe's HTTP steps and its WebSocket
   * server stand on that path, and `useGlobalPrefix` (which would serve it under the app's
   * prefix, where none of them stand) is refused, as is `subscriptions`: Scribe's own
   * WebSocket server serves that path's subscriptions, and a second one would take its
   * upgrades with a context that has no request (every subscription closed). The document's tokens are bounded while it is
   * parsed, on every document: `parseOptions.maxTokens` is Scribe's MAX_QUERY_TOKENS unless the
   * host's parseOptions give their own (higher or lower: the host's endpoint, the host's
   * parse), because graphql-js validates a whole document before any plugin sees its
   * operation, at a cost that grows with it. Scribe's other bounds on a document (aliases,
   * depth, cost), and its tokens whatever the host's maxTokens, bound the operations that
   * select Scribe's fields, whole, and leave the host's own to the host: a plugin checks them
   * once the operation is known (documentRulesPlugin), and Scribe adds no validation rule,
   * which would judge every document. A request is claimed for Scribe's refusal budget by the
   * same test (claimRequestsPlugin).
   */
  forHost(host: ApolloDriverConfig = {}): ApolloDriverConfig {
    if (host.useGlobalPrefix) {
      throw new Error(
        `Scribe's fields cannot be served under the app's global prefix (useGlobalPrefix), where Scribe's HTTP steps do not stand: set useGlobalPrefix to false and give the full path (prefix included) as Scribe's graphql.path and the GraphQLModule's path`,
      );
    }
    if (host.subscriptions !== undefined) {
      throw new Error(
        `Scribe serves subscriptions (graphql-ws) on its graphql.path itself, and a host's subscription server there would take its WebSocket upgrades (every subscription closed): leave \`subscriptions\` out of forHost's options`,
      );
    }
    const path = host.path ?? this.config.graphqlPath;
    if (path !== this.config.graphqlPath) {
      throw new Error(
        `Scribe's graphql.path is ${this.config.graphqlPath} but the host's GraphQLModule serves ${path}: give Scribe the host's path`,
      );
    }
    const protection = this.hostProtection;
    const hostContext = host.context as ((...args: unknown[]) => unknown) | object | undefined;
    const hostFormat = host.formatError;
    const maxTokens = host.parseOptions?.maxTokens ?? this.config.queryLimits.maxTokens;
    // A document stopped by Scribe's token limit is Scribe's refusal; by the host's, the host's.
    const scribeTokens = host.parseOptions?.maxTokens === undefined;
    return {
      autoSchemaFile: true,
      sortSchema: true,
      ...host,
      path,
      parseOptions: { ...protection.parseOptions, ...host.parseOptions, maxTokens },
      validationRules: [...(host.validationRules ?? []), ...(protection.validationRules ?? [])],
      stringifyResult: host.stringifyResult ?? this.stringifyResult(),
      plugins: [
        ...combinedPlugins([...this.pluginsWith(protection), claimRequestsPlugin()]),
        ...(host.plugins ?? []),
      ],
      formatError: (formatted, error) =>
        raisedByScribe(error) || (scribeTokens && stoppedByTokenLimit(formatted))
          ? this.formatError(formatted, error)
          : hostFormat
            ? hostFormat(formatted, error)
            : formatted,
      context: async (ctx: { req: Request }) => {
        const own: unknown =
          typeof hostContext === 'function' ? await hostContext(ctx) : (hostContext ?? {});
        return { ...(own as object), ...this.context(ctx.req) };
      },
    };
  }
}

/**
 * Whether Scribe raised a GraphQL error: it carries a ScribeException (Scribe's resolvers raise
 * nothing else), or is one of the refusals Scribe's plugins and rules raise (ScribeRefusal).
 */
function raisedByScribe(error: unknown): boolean {
  const original = (error as { originalError?: unknown } | undefined)?.originalError;
  return original instanceof ScribeException || isScribeRefusal(error);
}
