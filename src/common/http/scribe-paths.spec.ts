import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { ApplicationConfig } from '@nestjs/core';
import { closeGraphqlSubtree, type MountedLayers } from './graphql-subtree.js';
import { nestRoutePaths } from './nest-route-paths.js';
import { ScribePaths, type RouterView } from './scribe-paths.js';

const at = (path: string) => ({ baseUrl: '', path, method: 'POST' }) as Request;

function pathsOf(router: RouterView, graphqlPath = '/graphql', guardAllPaths = false) {
  return new ScribePaths({ graphqlPath, guardAllPaths }, () => router);
}

describe(ScribePaths.name, () => {
  it.each([
    ['/graphql', 'graphql'],
    ['/graphql/', 'graphql'],
    ['/GraphQL', 'graphql'],
    ['/graphql/admin', undefined],
    ['/graphql//', undefined],
    ['/graphql-x', undefined],
    ['/graphqlx', undefined],
    ['/health', 'health'],
    ['/HEALTH/', 'health'],
    ['/health/live', 'health'],
    ['/health/ready/', 'health'],
    ['/HEALTH/Ready', 'health'],
    ['/health/x', undefined],
    ['/health/live/x', undefined],
    ['/healthz', undefined],
    ['/metrics', 'metrics'],
    ['/metrics/x', undefined],
    ['/sessions/demo/export', 'export'],
    ['/sessions/user-42:a.b_c/export/', 'export'],
    ['/Sessions/x/EXPORT', 'export'],
    ['/sessions/%2F/export', 'export'],
    ['/sessions/x/export/y', undefined],
    ['/sessions//export', undefined],
    ['/sessions/a/b/export', undefined],
    ['/sessions/x/exports', undefined],
    ['/sessions/x', undefined],
    ['/sessions', undefined],
    ['/', undefined],
  ])('takes %p for %p, as Express routes it by default', (path, route) => {
    expect(pathsOf({}).routeOf(at(path))).toBe(route);
  });

  it("follows the router's case sensitivity and strict routing", () => {
    const sensitive = pathsOf({ caseSensitive: true });
    expect(sensitive.routeOf(at('/GraphQL'))).toBeUndefined();
    expect(sensitive.routeOf(at('/Health'))).toBeUndefined();
    expect(sensitive.routeOf(at('/graphql'))).toBe('graphql');
    const strict = pathsOf({ strict: true });
    expect(strict.routeOf(at('/health/'))).toBeUndefined();
    expect(strict.routeOf(at('/health'))).toBe('health');
    expect(strict.routeOf(at('/sessions/x/export/'))).toBeUndefined();
    expect(strict.routeOf(at('/sessions/x/export'))).toBe('export');
    expect(sensitive.routeOf(at('/sessions/X/Export'))).toBeUndefined();
    expect(sensitive.routeOf(at('/sessions/X/export'))).toBe('export');
    // Apollo is mounted with app.use: the trailing slash reaches it whatever the routing.
    expect(strict.routeOf(at('/graphql/'))).toBe('graphql');
  });

  it('matches a configured path literally, from the root of a mounted layer too', () => {
    const paths = pathsOf({}, '/api/v1.0');
    expect(paths.routeOf(at('/api/v1.0'))).toBe('graphql');
    expect(paths.routeOf(at('/api/v1x0'))).toBeUndefined();
    const inside = { baseUrl: '/API/v1.0', path: '/', method: 'GET' } as Request;
    expect(paths.isGraphql(inside)).toBe(true);
  });

  it("takes an export where Nest serves it, under a host's global prefix", () => {
    const config = new ApplicationConfig();
    config.setGlobalPrefix('api');
    const paths = new ScribePaths(
      { graphqlPath: '/graphql', guardAllPaths: false },
      () => ({}),
      (controller, method) => nestRoutePaths(config, controller, method),
    );
    expect(paths.isExport(at('/api/sessions/demo/export'))).toBe(true);
    expect(paths.isExport(at('/sessions/demo/export'))).toBe(false);
    expect(paths.routeOf(at('/api/health/live'))).toBe('health');
    // A host's own routes beside it stay the host's.
    expect(paths.routeOf(at('/api/sessions/demo'))).toBeUndefined();
    expect(paths.routeOf(at('/api/sessions/demo/other'))).toBeUndefined();
  });

  it('finds the GraphQL path taken where a prefix or version puts /health or /metrics', () => {
    const prefixed = (graphqlPath: string, router: RouterView = {}) =>
      new ScribePaths(
        { graphqlPath, guardAllPaths: false },
        () => router,
        (route) => [`/api/${route}`, `/v1/${route}`],
      ).graphqlPathTaken();
    expect(prefixed('/api/health')).toBe(
      "graphql.path /api/health is where this app serves Scribe's /health (under its global prefix or version): choose another graphql.path",
    );
    expect(prefixed('/v1/metrics')).toMatch(/^graphql\.path \/v1\/metrics is where .* \/metrics /);
    expect(prefixed('/API/Health')).toBeDefined();
    expect(prefixed('/API/Health', { caseSensitive: true })).toBeUndefined();
    expect(prefixed('/graphql')).toBeUndefined();
    expect(prefixed('/api/graphql')).toBeUndefined();
    expect(prefixed('/health')).toBeUndefined();
  });

  it('gates every guarded path but the health probes and /metrics', () => {
    for (const paths of [pathsOf({}, '/graphql', true), pathsOf({})]) {
      expect(paths.isGated(at('/graphql'))).toBe(true);
      expect(paths.isGated(at('/health'))).toBe(false);
      expect(paths.isGated(at('/health/live'))).toBe(false);
      expect(paths.isGated(at('/health/ready'))).toBe(false);
      expect(paths.isGated(at('/metrics'))).toBe(false);
      expect(paths.isGated(at('/sessions/demo/export'))).toBe(true);
    }
    expect(pathsOf({}, '/graphql', true).isGated(at('/nope'))).toBe(true);
    expect(pathsOf({}).isGated(at('/nope'))).toBe(false);
  });

  it('guards every path with guardAllPaths, Scribe routes only otherwise', () => {
    expect(pathsOf({}, '/graphql', true).isGuarded(at('/anything'))).toBe(true);
    expect(pathsOf({}).isGuarded(at('/anything'))).toBe(false);
    expect(pathsOf({}).isGuarded(at('/metrics'))).toBe(true);
  });
});

describe(closeGraphqlSubtree.name, () => {
  function app() {
    const served = express();
    served.get('/graphql/admin', (_request, response) => {
      response.send('host');
    });
    // As Nest's Apollo driver mounts it: after the routes, on the whole subtree.
    served.use('/graphql', (_request, response) => {
      response.send('apollo');
    });
    served.use(
      '/graphql',
      (error: Error, _request: Request, response: Response, _next: NextFunction) => {
        response.status(500).send(error.message);
      },
    );
    served.use((_request: Request, response: Response) => {
      response.status(404).send('not found');
    });
    return served;
  }

  it('keeps a handler mounted on the path to the path itself', async () => {
    const served = app();
    const router = served.router as unknown as MountedLayers & RouterView;
    const paths = pathsOf(router);
    expect(closeGraphqlSubtree(router, '/graphql', paths.isGraphql)).toBe(1);
    for (const path of ['/graphql', '/graphql/', '/GraphQL', '/GRAPHQL/']) {
      expect((await request(served).post(path)).text).toBe('apollo');
    }
    expect((await request(served).get('/graphql/admin')).text).toBe('host');
    for (const path of ['/graphql/admin', '/graphql/x', '/GraphQL/x/y']) {
      const answer = await request(served).post(path);
      expect([answer.status, answer.text]).toEqual([404, 'not found']);
    }
  });

  it('answers the whole subtree when not applied (the control)', async () => {
    expect((await request(app()).post('/graphql/x')).text).toBe('apollo');
  });
});
