import { Inject, Module, Optional, type OnApplicationBootstrap } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { type Server } from 'node:http';
import { ScribeConfig } from '../../config/scribe-config.js';
import { type ScribeOptions } from '../../config/scribe-options.js';
import { SCRIBE_OPTIONS } from '../../config/tokens.js';
import { closeGraphqlSubtree, type MountedLayers } from './graphql-subtree.js';
import { nestRoutePaths } from './nest-route-paths.js';
import { RefusalBudget } from './refusal-budget.js';
import { ScribeHttpFront } from './scribe-http-front.js';
import { ScribePaths, type RouterView } from './scribe-paths.js';
import { applyServerDeadlines } from './server-deadlines.js';

/**
 * Scribe's HTTP protections, installed by the module itself: no step for a host or main.ts.
 * ScribeHttpFront mounts every step on the Express instance, ahead of any body parser and of
 * Nest's routes and middleware (a host's global prefix does not move them); the server's own
 * deadlines are set once the application is bootstrapped. A host's routes are left as the
 * host made them.
 */
@Module({
  providers: [
    {
      provide: ScribePaths,
      inject: [ScribeConfig, HttpAdapterHost, ApplicationConfig],
      useFactory: (config: ScribeConfig, adapterHost: HttpAdapterHost, app: ApplicationConfig) =>
        new ScribePaths(
          config,
          () => adapterHost.httpAdapter?.getInstance<{ router?: RouterView }>().router,
          (controller, method) => nestRoutePaths(app, controller, method),
        ),
    },
    ScribeHttpFront,
  ],
})
export class ScribeHttpModule implements OnApplicationBootstrap {
  constructor(
    private readonly config: ScribeConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly budget: RefusalBudget,
    private readonly paths: ScribePaths,
    @Optional() @Inject(SCRIBE_OPTIONS) private readonly options?: ScribeOptions,
  ) {}

  onApplicationBootstrap(): void {
    // A standalone application context (a worker, a script) serves no HTTP to guard.
    if (!this.adapterHost.httpAdapter) return;
    const taken = this.paths.graphqlPathTaken();
    if (taken !== undefined) throw new Error(taken);
    this.closeGraphqlSubtree();
    if (!this.config.serverDeadlines) return;
    // A head cut by the server is charged to the socket's address: not behind a proxy, whose
    // address every client shares.
    const headBudget =
      this.config.maxRefusalsPerMinute > 0 && this.config.trustProxy === false
        ? this.budget
        : undefined;
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    applyServerDeadlines(server, this.config.httpTimeouts, headBudget);
  }

  /** Apollo, mounted by now (GraphQLModule's onModuleInit), answers Scribe's exact path only. */
  private closeGraphqlSubtree(): void {
    const express = this.adapterHost.httpAdapter.getInstance<{ router?: MountedLayers }>();
    const path = this.config.graphqlPath;
    const wrapped = closeGraphqlSubtree(express.router, path, this.paths.isGraphql);
    if (wrapped > 0) return;
    // Scribe's own endpoint is mounted by ScribeModule, a host's by its GraphQLModule ('host'
    // mode cannot start without one: the WebSocket server needs its schema). Not finding it on
    // Scribe's path, Scribe cannot keep the paths under it from bypassing its steps; and a
    // host's mounted elsewhere (a global prefix, another path) serves Scribe's fields with none
    // of Scribe's HTTP steps before it. Either way, Scribe refuses to start.
    throw new Error(
      this.options?.graphql?.mode === 'host'
        ? `Scribe found no GraphQL server mounted on its graphql.path ${path}, where its HTTP steps stand: mount the host's GraphQLModule on exactly that path (forHost), with no global prefix`
        : `Scribe found no GraphQL server mounted on ${path} to keep to that path`,
    );
  }
}
