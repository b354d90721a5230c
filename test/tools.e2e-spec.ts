import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import { createTestApp, type TestApp } from './support/test-app.js';

// What a new user's tools do against a development instance: a browser opens the IDE (served
// from npm packages: every request that leaves localhost is refused here, as on a network with
// no CDN), which introspects the schema with the standard query; graphql-codegen generates
// types from the live URL.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const run = promisify(execFile);

const CHAT_OPERATIONS = `
subscription Live($sessionId: ID!, $after: String) {
  messageAppended(sessionId: $sessionId, after: $after) { cursor node { id role content status } }
}
query Newest($id: ID!, $before: String) {
  session(id: $id) {
    messages(last: 50, before: $before) {
      pageInfo { hasPreviousPage startCursor }
      edges { cursor node { id content status } }
    }
  }
}
mutation Send($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id } }
}
`;

describe('tools against a development instance', () => {
  let sut: TestApp;
  let base: string;

  beforeAll(async () => {
    sut = await createTestApp('sqlite', { NODE_ENV: 'development' });
    await sut.app.listen(0, '127.0.0.1');
    base = await sut.app.getUrl();
  });

  afterAll(() => sut.close());

  it('serves the IDE page and its assets from the installed packages, naming no other host', async () => {
    const page = await fetch(`${base}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ['react.js', 'react-dom.js', 'graphiql.js', 'graphiql.css']) {
      const response = await fetch(`${base}/graphql/ide/${asset}`);
      expect({ asset, status: response.status }).toEqual({ asset, status: 200 });
      expect((await response.text()).length).toBeGreaterThan(1000);
    }
    expect((await fetch(`${base}/graphql/ide/..%2Fpackage.json`)).status).toBe(404);
    // A GET that asks for JSON is Apollo's, as before.
    const get = await fetch(`${base}/graphql?query=%7B__typename%7D`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(await get.json()).toEqual({ data: { __typename: 'Query' } });
  });

  const browserTest = existsSync(CHROMIUM) ? it : it.skip;
  if (!existsSync(CHROMIUM)) {
    process.stderr.write(
      `IDE browser test skipped: no Chromium at ${CHROMIUM} (.ci/run installs it)\n`,
    );
  }

  browserTest(
    'the IDE loads in a headless browser, introspects the schema and runs a query, with no request leaving localhost',
    async () => {
      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
        const page = await browser.newPage();
        const outside: string[] = [];
        await page.route('**/*', (route) => {
          const url = new URL(route.request().url());
          if (url.hostname === '127.0.0.1') return route.continue();
          outside.push(url.href);
          return route.abort();
        });
        const introspected = page.waitForResponse(
          (response) =>
            response.url().endsWith('/graphql') &&
            (response.request().postData() ?? '').includes('__schema'),
        );
        await page.goto(`${base}/graphql`);
        const schema = await (await introspected).json();
        expect(schema.errors).toBeUndefined();
        expect(schema.data.__schema.types.map((type: { name: string }) => type.name)).toEqual(
          expect.arrayContaining(['Message', 'MessageEdge', 'Session', 'Subscription']),
        );

        await page.locator('.graphiql-query-editor .CodeMirror').first().click();
        await page.keyboard.press('Control+A');
        await page.keyboard.type('{ sessions(first: 1) { totalCount } }');
        await page.keyboard.press('Control+Enter');
        await page
          .locator('.result-window')
          .filter({ hasText: 'totalCount' })
          .waitFor({ timeout: 15_000 });
        expect(await page.locator('.result-window').innerText()).toMatch(/"totalCount": 0/);
        expect(outside).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
  );

  it('graphql-codegen generates typed operations for a chat front end from the live URL', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'scribe-codegen-'));
    try {
      await writeFile(join(directory, 'chat.graphql'), CHAT_OPERATIONS);
      await writeFile(
        join(directory, 'codegen.json'),
        JSON.stringify({
          schema: `${base}/graphql`,
          documents: join(directory, 'chat.graphql'),
          generates: {
            [join(directory, 'chat.ts')]: { plugins: ['typescript', 'typescript-operations'] },
          },
        }),
      );
      await run(
        join(process.cwd(), 'node_modules/.bin/graphql-codegen'),
        ['--config', join(directory, 'codegen.json')],
        { cwd: process.cwd(), timeout: 60_000 },
      ).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`graphql-codegen failed:\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
      });
      const generated = await readFile(join(directory, 'chat.ts'), 'utf8');
      for (const name of [
        'export type LiveSubscription',
        'export type NewestQuery',
        'export type SendMutation',
        'export enum AppendStatus',
        'hasPreviousPage',
      ]) {
        expect(generated).toContain(name);
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('tools against a production instance', () => {
  it('serves no IDE: a browser asking for /graphql gets no page', async () => {
    const sut = await createTestApp('sqlite', {});
    try {
      const response = await sut.http().get('/graphql').set('accept', 'text/html');
      expect(response.status).not.toBe(200);
      expect(response.text).not.toContain('GraphiQL');
      expect((await sut.http().get('/graphql/ide/graphiql.js')).status).not.toBe(200);
    } finally {
      await sut.close();
    }
  });
});
