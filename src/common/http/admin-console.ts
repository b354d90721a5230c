import { type Express, type Request, type Response } from 'express';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/** The console's bundle, built by `npm run build` (esbuild) into dist/admin-console/. */
const ASSETS = ['admin-console.js', 'admin-console.css'];

/** The package's root: the first directory above this file with a package.json. */
function packageRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(directory, 'package.json'))) directory = dirname(directory);
  return directory;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** The page: the sections' headings and controls are here, the script fills them in. */
const pageOf = (path: string, graphqlPath: string) => `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Scribe admin</title>
    <link rel="stylesheet" href="${path}/assets/admin-console.css" />
    <script type="module" src="${path}/assets/admin-console.js"></script>
  </head>
  <body data-graphql-path="${escapeHtml(graphqlPath)}">
    <h1>Scribe admin</h1>
    <form id="sign-in">
      <label for="token">Admin token</label>
      <input id="token" type="password" autocomplete="off" required />
      <button>Sign in</button>
      <p id="sign-in-error" role="alert"></p>
    </form>
    <p><span id="status" role="status"></span></p>
    <main id="console" hidden>
      <section aria-labelledby="database-heading">
        <h2 id="database-heading">Database</h2>
        <dl id="database"></dl>
        <button type="button" id="retry">Retry now</button>
        <button type="button" id="sign-out">Sign out</button>
      </section>
      <section aria-labelledby="pending-heading">
        <h2 id="pending-heading">Pending</h2>
        <div id="pending"></div>
      </section>
      <section aria-labelledby="spool-heading">
        <h2 id="spool-heading">Spool</h2>
        <dl id="spool"></dl>
      </section>
      <section aria-labelledby="gate-heading">
        <h2 id="gate-heading">Gate</h2>
        <dl id="gate"></dl>
      </section>
      <section class="wide" aria-labelledby="set-aside-heading">
        <h2 id="set-aside-heading">Set aside</h2>
        <div id="set-aside"></div>
      </section>
      <section class="wide" aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        <form id="search-form" role="search">
          <label for="search">Title contains</label>
          <input id="search" type="search" />
          <button>Search</button>
        </form>
        <div id="session-list"></div>
        <div id="transcript" aria-live="polite"></div>
      </section>
    </main>
    <dialog id="confirm">
      <form method="dialog">
        <p id="confirm-text"></p>
        <button value="cancel">Cancel</button>
        <button value="ok">Confirm</button>
      </form>
    </dialog>
  </body>
</html>
`;

/**
 * The admin console at `path` (ADMIN_CONSOLE_PATH): a static page and its bundle, which work
 * through the GraphQL API at `graphqlPath` with an admin token the operator types in. Mounted
 * on the Express instance as the IDE is (graphql-ide.ts), so that it is served in both GraphQL
 * modes and without a host's global prefix, beside the GraphQL path it calls. The page names
 * no other host, and its Content-Security-Policy lets it reach none.
 */
export function serveAdminConsole(express: Express, path: string, graphqlPath: string): void {
  const page = pageOf(path, graphqlPath);
  const directory = join(packageRoot(), 'dist', 'admin-console');
  const security = (response: Response) =>
    response.set({
      'content-security-policy':
        "default-src 'self'; connect-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
  express.get(`${path}/assets/:asset`, (request: Request, response: Response) => {
    const asset = String(request.params.asset);
    if (!ASSETS.includes(asset)) {
      response
        .status(404)
        .json({ error: { code: ScribeErrorCode.NotFound, message: 'No such asset' } });
      return;
    }
    security(response).sendFile(join(directory, asset), { maxAge: '1h' }, (error?: Error) => {
      if (error && !response.headersSent) {
        response.status(404).json({
          error: {
            code: ScribeErrorCode.NotFound,
            message: 'The console is not built: run npm run build',
          },
        });
      }
    });
  });
  express.get(path, (_request: Request, response: Response) => {
    security(response).type('html').set('cache-control', 'no-store').send(page);
  });
}
