import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from './support/test-app.js';

// CORS as a browser does it: Apollo Client, configured with a client name and version as its
// docs show, in a page on another origin (another port), calls Scribe from Chromium. Its
// `apollographql-client-*` headers pass the preflight by default; a header of the app's own
// passes once CORS_ALLOWED_HEADERS lists it, and is refused by the browser before that.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// What the page runs: Apollo Client as a front end bundles it.
const ENTRY = `
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
window.askScribe = async (uri, headers) => {
  const client = new ApolloClient({
    link: new HttpLink({ uri, headers }),
    cache: new InMemoryCache(),
    clientAwareness: { name: 'chat-web', version: '1.4.2' },
  });
  try {
    const { data, error } = await client.query({ query: gql\`{ __typename }\`, fetchPolicy: 'network-only' });
    return error ? { error: error.message } : { data };
  } catch (error) {
    return { error: String(error && error.message) };
  }
};
`;

/** The page's own origin: an HTML page and its bundled script. */
async function pageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const bundled = await build({
    stdin: { contents: ENTRY, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const script = bundled.outputFiles[0].text;
  const server: Server = createServer((request, response) => {
    if (request.url === '/app.js') {
      response.setHeader('content-type', 'text/javascript');
      response.end(script);
      return;
    }
    response.setHeader('content-type', 'text/html');
    response.end('<!doctype html><title>chat</title><script type="module" src="/app.js"></script>');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

const browserTest = existsSync(CHROMIUM) ? describe : describe.skip;
if (!existsSync(CHROMIUM)) {
  process.stderr.write(
    `CORS browser test skipped: no Chromium at ${CHROMIUM} (.ci/run installs it)\n`,
  );
}

browserTest('Apollo Client in a browser page on another origin', () => {
  let page: { origin: string; close(): Promise<void> };
  let browser: Browser;
  const scribes: TestApp[] = [];

  beforeAll(async () => {
    page = await pageServer();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(scribes.map((sut) => sut.close()));
    await page?.close();
  });

  /** Scribe listening on a port of its own, CORS_ORIGINS naming the page's origin. */
  async function scribe(variables: Record<string, string> = {}): Promise<string> {
    const sut = await createTestApp('sqlite', {
      CORS_ORIGINS: page.origin,
      API_TOKENS: 'web=read+append',
      ...variables,
    });
    scribes.push(sut);
    await sut.app.listen(0, '127.0.0.1');
    const { port } = sut.app.getHttpServer().address() as AddressInfo;
    return `http://127.0.0.1:${port}/graphql`;
  }

  /**
   * The page, loaded. Requests are not intercepted (Playwright answers the CORS preflights of
   * routed requests itself, and allows everything): the browser resolves no host name but
   * 127.0.0.1 (launch flags), so a request that would leave the machine fails, and is counted.
   */
  async function openPage(): Promise<{
    tab: Page;
    outside: string[];
    sent: Record<string, string>[];
  }> {
    const tab = await browser.newPage();
    const outside: string[] = [];
    const sent: Record<string, string>[] = [];
    tab.on('request', (request) => {
      if (new URL(request.url()).hostname !== '127.0.0.1') outside.push(request.url());
      if (request.method() === 'POST') sent.push(request.headers());
    });
    await tab.goto(page.origin);
    await tab.waitForFunction(() => 'askScribe' in globalThis);
    return { tab, outside, sent };
  }

  const ask = (tab: Page, uri: string, headers: Record<string, string>) =>
    tab.evaluate(
      ([target, extra]) =>
        (
          globalThis as unknown as {
            askScribe(uri: string, headers: Record<string, string>): Promise<unknown>;
          }
        ).askScribe(target, extra),
      [uri, headers] as const,
    );

  it('passes the preflight with its client-name and client-version headers', async () => {
    const uri = await scribe();
    const { tab, outside, sent } = await openPage();
    const answer = await ask(tab, uri, { authorization: 'Bearer web' });
    expect(answer).toEqual({ data: { __typename: 'Query' } });
    expect(sent[0]).toMatchObject({
      'apollographql-client-name': 'chat-web',
      'apollographql-client-version': '1.4.2',
    });
    expect(outside).toEqual([]);
    // And the launch flags hold: a request for another host never leaves the machine.
    const elsewhere = await tab.evaluate(() =>
      fetch('http://scribe-test.example/').then(
        () => 'reached',
        () => 'refused',
      ),
    );
    expect(elsewhere).toBe('refused');
    await tab.close();
  });

  it('sends a header of its own only once CORS_ALLOWED_HEADERS lists it', async () => {
    const plain = await scribe();
    const listing = await scribe({ CORS_ALLOWED_HEADERS: 'X-Trace-Id' });
    const { tab, outside } = await openPage();
    const headers = { authorization: 'Bearer web', 'x-trace-id': 't-1' };
    // The browser refuses it before the request is sent: the preflight did not allow it.
    expect(await ask(tab, plain, headers)).toEqual({ error: expect.stringMatching(/fetch/i) });
    expect(await ask(tab, listing, headers)).toEqual({ data: { __typename: 'Query' } });
    expect(outside).toEqual([]);
    await tab.close();
  });
});
