import {
  Inject,
  Module,
  Optional,
  RequestMethod,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { type Server } from 'node:http';
import { ScribeConfig } from '../../config/scribe-config.js';
import { type ScribeOptions } from '../../config/scribe-options.js';
import { SCRIBE_OPTIONS } from '../../config/tokens.js';
import { closeUnreadBodies, queryBound } from './body-checks.js';
import { closeGraphqlSubtree, type MountedLayers } from './graphql-subtree.js';
import { RefusalBudget } from './refusal-budget.js';
import { ScribeHttpFront } from './scribe-http-front.js';
import { onlyWhere, ScribePaths, type RouterView } from './scribe-paths.js';
import { applyServerDeadlines } from './server-deadlines.js';

/**
 * Scribe's HTTP protections, installed by the module itself: no step for a host or main.ts.
 * ScribeHttpFront mounts what must come before any body parser; the steps after the body is
 * read are Nest middleware on Scribe's routes; the server's own deadlines are set once the
 * application is bootstrapped. A host's routes are left as the host made them.
 */
@Module({
  providers: [
    {
      provide: ScribePaths,
      inject: [ScribeConfig, HttpAdapterHost],
      useFactory: (config: ScribeConfig, adapterHost: HttpAdapterHost) =>
        new ScribePaths(
          config,
          () => adapterHost.httpAdapter?.getInstance<{ router?: RouterView }>().router,
        ),
    },
    ScribeHttpFront,
  ],
})
export class ScribeHttpModule implements NestModule, OnApplicationBootstrap {
  constructor(
    private readonly config: ScribeConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly budget: RefusalBudget,
    private readonly paths: ScribePaths,
    @Optional() @Inject(SCRIBE_OPTIONS) private readonly options?: ScribeOptions,
  ) {}

  configure(consumer: MiddlewareConsumer): void {
    // On every path, each step then picks Scribe's routes as the front does (ScribePaths):
    // Nest's own path matching would take the subtree under the GraphQL path, a host's too.
    const everyPath = { path: '{*splat}', method: RequestMethod.ALL };
    consumer.apply(onlyWhere(this.paths.isGuarded, closeUnreadBodies)).forRoutes(everyPath);
    consumer
      .apply(onlyWhere(this.paths.isGraphql, queryBound(this.config.queryLimits.maxBytes)))
      .forRoutes(everyPath);
  }

  onApplicationBootstrap(): void {
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
    // Scribe's own endpoint is mounted by ScribeModule: not finding it, Scribe cannot keep the
    // paths under it from bypassing its steps, and refuses to start (a host's may be absent).
    if (wrapped === 0 && this.options?.graphql?.mode !== 'host') {
      throw new Error(`Scribe found no GraphQL server mounted on ${path} to keep to that path`);
    }
  }
}
