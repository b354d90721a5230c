import {
  Module,
  RequestMethod,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { type Server } from 'node:http';
import { ScribeConfig } from '../../config/scribe-config.js';
import { closeUnreadBodies, queryBound } from './body-checks.js';
import { RefusalBudget } from './refusal-budget.js';
import { ScribeHttpFront } from './scribe-http-front.js';
import { scribePaths } from './scribe-paths.js';
import { applyServerDeadlines } from './server-deadlines.js';

/**
 * Scribe's HTTP protections, installed by the module itself: no step for a host or main.ts.
 * ScribeHttpFront mounts what must come before any body parser; the steps after the body is
 * read are Nest middleware on Scribe's routes; the server's own deadlines are set once the
 * application is bootstrapped. A host's routes are left as the host made them.
 */
@Module({ providers: [ScribeHttpFront] })
export class ScribeHttpModule implements NestModule, OnApplicationBootstrap {
  constructor(
    private readonly config: ScribeConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly budget: RefusalBudget,
  ) {}

  configure(consumer: MiddlewareConsumer): void {
    const paths = scribePaths(this.config);
    const routes = (mounts: string | string[]) =>
      mounts === '/'
        ? [{ path: '{*splat}', method: RequestMethod.ALL }]
        : [mounts].flat().map((path) => ({ path, method: RequestMethod.ALL }));
    consumer.apply(closeUnreadBodies).forRoutes(...routes(paths.guarded));
    consumer
      .apply(queryBound(this.config.queryLimits.maxBytes))
      .forRoutes(...routes([this.config.graphqlPath]));
  }

  onApplicationBootstrap(): void {
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
}
