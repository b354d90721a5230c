import { type ApolloServerPlugin } from '@apollo/server';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable } from '@nestjs/common';
import { type Request } from 'express';
import { type GraphQLFormattedError } from 'graphql';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { fieldScopesPlugin } from '../common/auth/field-scopes.plugin.js';
import { BoundedSlots } from '../common/concurrency/bounded-slots.js';
import { errorLogPlugin } from '../common/errors/error-log.plugin.js';
import { formatGraphQLError } from '../common/errors/graphql-error.util.js';
import { requestAbortSignal } from '../common/http/request-abort-signal.js';
import { requestIdOf } from '../common/http/request-id.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { MAX_TITLE_CHARACTERS } from '../session/dto/update-session.input.js';
import { serialiseAnswer } from '../common/graphql/answer-serialiser.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { httpOperationsPlugin } from '../common/graphql/http-operations.plugin.js';
import { queryProtection } from '../common/graphql/query-protection.js';
import { ResponseBudget } from '../common/graphql/response-budget.js';
import { responseBudgetPlugin } from '../common/graphql/response-budget.plugin.js';

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
  private readonly largeAnswers: BoundedSlots;

  constructor(
    private readonly config: ScribeConfig,
    private readonly refusals: AuthFailureLog,
    private readonly authenticator: Authenticator,
  ) {
    this.protection = queryProtection(config.queryLimits);
    const limits = config.responseLimits;
    this.largeAnswers = new BoundedSlots(limits.maxLarge, limits.slotTimeoutMs);
  }

  /** Scribe's Apollo plugins, in their order; each judges Scribe's fields only. */
  plugins(): ApolloServerPlugin<GraphQLContext>[] {
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
      errorLogPlugin(this.refusals),
      httpOperationsPlugin(),
      fieldScopesPlugin(this.authenticator),
      ...(this.protection.plugins as ApolloServerPlugin<GraphQLContext>[]),
      answers,
    ];
  }

  /**
   * What Scribe's resolvers need in a request's context: the request, its id (also sent back
   * as `x-request-id`), and the budget its answer is built within.
   */
  context(req: Request): GraphQLContext {
    const requestId = requestIdOf(req);
    req.res?.setHeader('x-request-id', requestId);
    const budget = new ResponseBudget(
      this.config.responseLimits,
      this.largeAnswers,
      requestAbortSignal(req),
    );
    return { req, requestId, budget };
  }

  /** Apollo's formatError: Scribe's codes, and nothing of a fault's internals. */
  readonly formatError = (formatted: GraphQLFormattedError, error: unknown) =>
    formatGraphQLError(formatted, error, this.config.development);

  /** The bounds checked while a document is parsed and validated (its tokens, aliases, ...). */
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
      plugins: this.plugins(),
      context: ({ req }: { req: Request }): GraphQLContext => this.context(req),
    };
  }
}
