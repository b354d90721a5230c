import { type Express, type NextFunction, type Request, type Response } from 'express';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/** Where each asset of the IDE page is, in the packages npm installed (never a CDN). */
const ASSETS: Record<string, { packageName: string; file: string }> = {
  'react.js': { packageName: 'react', file: 'umd/react.production.min.js' },
  'react-dom.js': { packageName: 'react-dom', file: 'umd/react-dom.production.min.js' },
  'graphiql.js': { packageName: 'graphiql', file: 'graphiql.min.js' },
  'graphiql.css': { packageName: 'graphiql', file: 'graphiql.min.css' },
};
/** The page, for the endpoint at `path`; its assets are under `path`/ide/. */
const pageOf = (path: string) => `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Scribe GraphiQL</title>
    <style>body { margin: 0; } #graphiql { height: 100vh; }</style>
    <link rel="stylesheet" href="${path}/ide/graphiql.css" />
    <script src="${path}/ide/react.js"></script>
    <script src="${path}/ide/react-dom.js"></script>
    <script src="${path}/ide/graphiql.js"></script>
  </head>
  <body>
    <div id="graphiql">Loading…</div>
    <script>
      const url = new URL('${path}', location.href);
      const socketUrl = url.href.replace(/^http/, 'ws');
      const fetcher = GraphiQL.createFetcher({ url: url.href, subscriptionUrl: socketUrl });
      ReactDOM.createRoot(document.getElementById('graphiql')).render(
        React.createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: true }),
      );
    </script>
  </body>
</html>
`;

/** The directory of an installed package, found from its entry point. */
function packageDirectory(name: string): string {
  const require = createRequire(import.meta.url);
  let directory = dirname(require.resolve(name));
  while (!existsSync(join(directory, 'package.json'))) directory = dirname(directory);
  return directory;
}

/**
 * Development only: GraphiQL on GET `path` (GRAPHQL_PATH) for a browser (one that asks for HTML and sends no
 * query), with its scripts and styles served from the installed graphiql, react and react-dom
 * packages: these machines, and many a corporate network, reach no CDN. Apollo's own landing
 * page, which loads from one, is off.
 */
export function serveGraphqlIde(express: Express, path = '/graphql'): void {
  const page = pageOf(path);
  const files = new Map(
    Object.entries(ASSETS).map(([name, asset]) => [
      name,
      join(packageDirectory(asset.packageName), asset.file),
    ]),
  );
  express.get(`${path}/ide/:asset`, (request: Request, response: Response) => {
    const file = files.get(String(request.params.asset));
    if (!file) {
      response.status(404).json({
        error: { code: ScribeErrorCode.NotFound, message: 'No such IDE asset' },
      });
      return;
    }
    response.sendFile(file, { maxAge: '1h' });
  });
  express.get(path, (request: Request, response: Response, next: NextFunction) => {
    if (request.query.query !== undefined || request.accepts(['json', 'html']) !== 'html') {
      next();
      return;
    }
    response.type('html').send(page);
  });
}
