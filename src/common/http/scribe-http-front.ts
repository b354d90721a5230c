import {
  Inject,
  Injectable,
  Optional,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { type AbstractHttpAdapter, HttpAdapterHost } from '@nestjs/core';
import { type Express } from 'express';
import { ScribeConfig } from '../../config/scribe-config.js';
import { type ScribeOptions } from '../../config/scribe-options.js';
import { SCRIBE_OPTIONS } from '../../config/tokens.js';
import { AuthFailureLog } from '../auth/auth-failure-log.js';
import { Authenticator } from '../auth/authenticator.js';
import {
  closeUnreadBodies,
  declaredSizeCheck,
  jsonBodiesOnly,
  ndjsonBodiesOnly,
  queryBound,
  scribeBodyDeadline,
  scribeJsonBody,
} from './body-checks.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { credentialsFirst } from './credentials-first.js';
import { serveAdminConsole } from './admin-console.js';
import { serveGraphqlIde } from './graphql-ide.js';
import { httpErrorHandler } from './http-error-handler.js';
import { scribeCors } from './scribe-cors.js';
import { RefusalBudget } from './refusal-budget.js';
import { requestTracing } from './request-tracing.js';
import { claimedRefusalsOnly, refusalGate } from './refusal-gate.js';
import { errorsWhere, onlyWhere, ScribePaths } from './scribe-paths.js';
import { whileShuttingDown } from './shutting-down.js';

/**
 * Everything a request to Scribe meets before its body is read, cheapest first: CORS, the
 * refusal budget of its source, the caller's credentials (from the head: no byte of the body
 * is read for refused ones), the body's type (JSON only), its declared size, its deadline,
 * its size and shape (checked on the bytes, before parsing), the query's size; and plain JSON
 * answers for what is refused on the way.
 *
 * Why on the Express instance, at construction, and not in ScribeHttpModule.configure: unless
 * a host creates its app with `bodyParser: false`, app.init() registers Nest's JSON and
 * urlencoded parsers before any module middleware, and they would read Scribe's bodies first
 * (up to 100 kB, with their own errors, no deadline, credentials unchecked). The HTTP adapter
 * is known before init() (HttpAdapterHost.init$ replays it: at once under NestFactory.create,
 * at createNestApplication under @nestjs/testing), so these steps are mounted ahead of the
 * parsers; once Scribe's parser has read a body, Nest's skips it (body-parser sees it read).
 * Only Scribe's routes are touched, as Express routes them (ScribePaths), not the subtrees
 * under them that `express.use(path)` would cover: a host's routes, under Scribe's GraphQL path
 * too, keep its own parsers and settings. Apollo, which answers that subtree, is kept to the
 * exact path (closeGraphqlSubtree), so no request reaches it without these steps.
 */
@Injectable()
export class ScribeHttpFront implements OnModuleInit, OnModuleDestroy {
  // Set at the first of the shutdown hooks: new GraphQL requests and exports are answered 503.
  private closing = false;
  private refusal: string | undefined;

  constructor(
    adapterHost: HttpAdapterHost,
    private readonly config: ScribeConfig,
    private readonly budget: RefusalBudget,
    private readonly authenticator: Authenticator,
    private readonly refusals: AuthFailureLog,
    private readonly paths: ScribePaths,
    private readonly metrics: MetricsService,
    @Optional() @Inject(SCRIBE_OPTIONS) private readonly options?: ScribeOptions,
  ) {
    adapterHost.init$.subscribe(() => {
      const adapter = adapterHost.httpAdapter as AbstractHttpAdapter | null | undefined;
      // A standalone application context (a worker, a script) has no HTTP to guard.
      if (!adapter) return;
      if (adapter.getType() !== 'express') {
        // Not thrown here: RxJS rethrows a subscriber's error out of band, an uncaught
        // exception that would kill the host's process. The start is refused by onModuleInit.
        this.refusal = `Scribe serves HTTP on Express only, not ${adapter.getType()}`;
        return;
      }
      this.install(adapter.getInstance<Express>());
    });
  }

  /** Refuses the start (app.init() rejects) on a host whose HTTP adapter is not Express. */
  onModuleInit(): void {
    if (this.refusal !== undefined) throw new Error(this.refusal);
  }

  onModuleDestroy(): void {
    this.closing = true;
  }

  private install(express: Express): void {
    const config = this.config;
    const { isScribe, isGraphql, isTransfer, isImport, isGuarded, isGated } = this.paths;
    // First of all: a request's id and access line, whatever becomes of it. On every path when
    // Scribe serves alone; in a host's app, on Scribe's paths only (the others are the host's).
    const tracing = requestTracing({ atLogLevel: config.accessLog });
    express.use(config.guardAllPaths ? tracing : onlyWhere(isScribe, tracing));
    // A host owns its app's settings: `trust proxy` is set only when Scribe is told one.
    if (config.trustProxy !== false) express.set('trust proxy', config.trustProxy);
    if (config.corsOrigins.length > 0) {
      express.use(onlyWhere(isScribe, scribeCors(config.corsOrigins, config.corsAllowedHeaders)));
    }
    if (config.development) serveGraphqlIde(express, config.graphqlPath);
    serveAdminConsole(express, config.adminConsolePath, config.graphqlPath);
    // During shutdown, a GraphQL answer as GraphQL clients read one (not Nest's plain-text
    // `return503OnClosing` body, which main.ts leaves off for it); requests already past this
    // step finish. First after CORS, so that a browser may read it, and before anything reads.
    express.use(
      onlyWhere(
        (request) => isGraphql(request) || isTransfer(request),
        whileShuttingDown(() => this.closing),
      ),
    );
    // A probe of paths that do not exist is refused (404) as much as a bad query: on every
    // path when Scribe serves alone (guardAllPaths), but for the health probes and /metrics,
    // which a source past its budget still reaches (isGated).
    const gate = refusalGate(
      config.maxRefusalsPerMinute,
      this.budget,
      undefined,
      undefined,
      (reason) => this.metrics.refused(reason),
    );
    express.use(onlyWhere(isGated, gate));
    const origins = new Set(config.corsOrigins);
    // Credentials first, from the head alone: refused ones never cost a byte of the body.
    // Not in 'host' mode: the path is the host's endpoint too, and only the operation says
    // whether Scribe is called (a host's field needs no Scribe token, and a host's own token
    // is none of Scribe's); Scribe's part is refused then by fieldScopesPlugin and ScopeGuard.
    if (this.options?.graphql?.mode !== 'host') {
      express.use(
        onlyWhere(isGraphql, credentialsFirst(this.authenticator, this.refusals, origins)),
      );
    } else {
      // For the same reason, only Scribe's refusals there spend the source's refusal budget.
      express.use(onlyWhere(isGraphql, claimedRefusalsOnly));
    }
    // A transcript's export and import are Scribe's alone in either mode: their callers are
    // checked here too.
    express.use(
      onlyWhere(isTransfer, credentialsFirst(this.authenticator, this.refusals, origins)),
    );
    express.use(onlyWhere(isGraphql, jsonBodiesOnly));
    express.use(onlyWhere(isImport, ndjsonBodiesOnly));
    express.use(onlyWhere(isGraphql, declaredSizeCheck(config.maxBodyBytes)));
    // An import's body is read by its controller, line by line, with no size bound (a transcript
    // has no length limit) but this deadline: a client that trickles is cut.
    express.use(
      onlyWhere(
        (request) => isGraphql(request) || isImport(request),
        scribeBodyDeadline(config.httpTimeouts),
      ),
    );
    // Bodies are parsed here for GraphQL only: the import's controller reads its own.
    express.use(
      onlyWhere(isGraphql, scribeJsonBody(config.maxBodyBytes, config.queryLimits.maxBytes)),
    );
    // Here too, not as Nest middleware: Nest puts a host's global prefix before its routes,
    // which would take them off Scribe's GraphQL path (served without the prefix).
    express.use(onlyWhere(isGuarded, closeUnreadBodies));
    express.use(onlyWhere(isGraphql, queryBound(config.queryLimits.maxBytes)));
    express.use(errorsWhere(isScribe, httpErrorHandler(config.maxBodyBytes)));
  }
}
