import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { acceptedRecord } from '../src/message/testing/message-record.fixture.js';
import { SET_ASIDE_LOG } from '../src/spool/segment-names.js';
import { type SetAsideEntry } from '../src/spool/set-aside-entry.js';
import { APPEND, eventually, faultSuite } from './support/fault-helpers.js';
import { type ServerProcess } from './support/server-process.js';

// The admin console in Debian's Chromium, driven by Playwright, against the built server as a
// real process, with every request that leaves 127.0.0.1 refused (no CDN). It signs in, watches
// a real database outage (another process holding the SQLite lock) fill the pending queue and
// the spool, retries once the lock is released, acts on set-aside entries, reads a transcript
// backwards and deletes a session; wrong and read-only tokens are refused with the reason.
// Screenshots at 1280×800 and 390 px go to test-artifacts/admin/ (kept by CI); set
// UPDATE_DOCS_SCREENSHOT=1 to copy the wide one to docs/admin-console.png.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = 'test-artifacts/admin';
const { dataDirectory, faultTest, lockDatabase, server, cleanups } = faultSuite(120_000, {
  ADMIN_TOKEN: 'root-token',
  API_TOKENS: 'reader=read+append',
  // No background retry: the queue drains when the console's "Retry now" asks.
  DB_RETRY_INTERVAL_MS: '0',
});
const READER = { authorization: 'Bearer reader' };
const ADMIN = { authorization: 'Bearer root-token' };

async function append(target: ServerProcess, sessionId: string, content: string) {
  const answer = await target.gql(APPEND, { input: { sessionId, role: 'USER', content } }, READER);
  expect(answer.errors).toBeUndefined();
  return answer.data.appendMessage.status as string;
}

/** A set-aside log as a dead run left it: a record the database refused, and a torn line. */
async function setAsideLog(dataDir: string): Promise<void> {
  const spoolDir = join(dataDir, 'pending_messages');
  await mkdir(spoolDir, { recursive: true, mode: 0o700 });
  const record = acceptedRecord('redriven', 'came back', { acceptedAt: Date.now() - 60_000 });
  const entries: SetAsideEntry[] = [
    {
      at: Date.now() - 30_000,
      reason: 'refused by the database: a trigger said no',
      source: 'memory',
      sessionId: record.sessionId,
      messageId: record.id,
      record,
    },
    {
      at: Date.now() - 20_000,
      reason: 'checksum mismatch (torn or corrupted line)',
      source: 'journal-of-a-dead-run.jsonl',
      offset: 120,
      raw: '{"crc":"00000000","v":1,"mess',
    },
  ];
  await writeFile(
    join(spoolDir, SET_ASIDE_LOG),
    entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''),
    { mode: 0o600 },
  );
}

// Playwright's own expect is @playwright/test's: these wait the same way, with Jest's.
const WAIT_MS = 15_000;
const shows = (locator: Locator, text: string | RegExp) =>
  eventually(async () => expect(await locator.innerText()).toMatch(text), WAIT_MS);
const counts = (locator: Locator, count: number) =>
  eventually(async () => expect(await locator.count()).toBe(count), WAIT_MS);
const hidden = (locator: Locator) => locator.waitFor({ state: 'hidden', timeout: WAIT_MS });
const visible = (locator: Locator) => locator.waitFor({ state: 'visible', timeout: WAIT_MS });

const region = (page: Page, name: string) => page.getByRole('region', { name, exact: true });

async function signIn(page: Page, token: string): Promise<void> {
  const field = page.getByLabel('Admin token');
  await field.fill(token);
  await field.press('Enter');
}

const browserTest = existsSync(CHROMIUM) ? faultTest : it.skip;
if (!existsSync(CHROMIUM)) {
  process.stderr.write(
    `Admin console browser suite skipped: no Chromium at ${CHROMIUM} (.ci/run installs it)\n`,
  );
}

describe('the admin console in a browser', () => {
  browserTest(
    'signs in, watches an outage fill and Retry now drain the queue, acts on set-aside entries, pages a transcript back and deletes a session',
    async () => {
      const dataDir = await dataDirectory();
      await setAsideLog(dataDir);
      const target = await server({ DATA_DIR: dataDir });
      const browser: Browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox'],
      });
      cleanups.add(() => browser.close());
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const outside: string[] = [];
      await page.route('**/*', (route) => {
        const url = new URL(route.request().url());
        if (url.hostname === '127.0.0.1') return route.continue();
        outside.push(url.href);
        return route.abort();
      });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${target.url}/admin`);

      // Refused tokens, each with the server's reason; nothing of the console shows.
      await signIn(page, 'wrong-token');
      await shows(page.getByRole('alert'), 'Refused:');
      await hidden(region(page, 'Database'));
      await signIn(page, 'reader');
      await shows(page.getByRole('alert'), 'needs the admin scope');
      await hidden(region(page, 'Database'));
      expect(await page.evaluate('sessionStorage.length')).toBe(0);

      await signIn(page, 'root-token');
      for (const name of ['Database', 'Pending', 'Spool', 'Set aside', 'Gate', 'Sessions']) {
        await visible(page.getByRole('heading', { name, exact: true }));
      }
      expect(page.url()).not.toContain('root-token');
      expect(await page.evaluate("sessionStorage.getItem('scribe-admin-token')")).toBe(
        'root-token',
      );
      // The token survives a reload of the tab (sessionStorage), never in the URL.
      await page.reload();
      await shows(region(page, 'Database'), 'Writable');

      // A real outage: the figures grow as appends are queued.
      expect(await append(target, 'alpha', 'before the outage')).toBe('PERSISTED');
      const lock = await lockDatabase(dataDir);
      for (const [index, content] of ['one', 'two', 'three'].entries()) {
        expect(await append(target, 'alpha', content)).toBe('QUEUED');
        await shows(region(page, 'Pending'), `Pending messages: ${index + 1}`);
      }
      await shows(page.locator('#spool-records'), /^3$/);
      await shows(region(page, 'Database'), 'Down');
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'console-1280.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: join(ARTIFACTS, 'console-390.png'), fullPage: true });
      // Nothing wider than the phone's screen.
      expect(
        await page.evaluate<number>('document.documentElement.scrollWidth'),
      ).toBeLessThanOrEqual(390);
      await page.setViewportSize({ width: 1280, height: 800 });
      if (process.env.UPDATE_DOCS_SCREENSHOT) {
        await copyFile(join(ARTIFACTS, 'console-1280.png'), 'docs/admin-console.png');
      }

      // The lock released, "Retry now" (by keyboard) drains the queue.
      await lock.release();
      await shows(region(page, 'Pending'), 'Pending messages: 3');
      await page.getByRole('button', { name: 'Retry now' }).focus();
      await page.keyboard.press('Enter');
      await shows(region(page, 'Pending'), 'Pending messages: 0');
      await shows(page.locator('#spool-records'), /^0$/);
      await shows(region(page, 'Database'), 'Writable');

      // Set aside: a torn line cannot be re-driven (the reason is shown), the record can; the
      // torn line is dropped after a confirmation.
      const setAside = region(page, 'Set aside');
      const torn = setAside.getByRole('listitem').filter({ hasText: 'checksum mismatch' });
      const refused = setAside.getByRole('listitem').filter({ hasText: 'a trigger said no' });
      await torn.getByRole('button', { name: 'Re-drive' }).click();
      await shows(page.getByRole('status'), 'cannot be re-driven');
      await refused.getByRole('button', { name: 'Re-drive' }).click();
      await counts(refused, 0);
      await torn.getByRole('button', { name: 'Drop' }).click();
      const dialog = page.getByRole('dialog');
      await shows(dialog, 'checksum mismatch');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await counts(torn, 1);
      await torn.getByRole('button', { name: 'Drop' }).click();
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      await counts(torn, 0);
      await shows(setAside, 'Open entries: 0');
      await target.waitForOutput(/Dropped set-aside entry \w+ .*checksum mismatch/);

      // A long transcript, searched by title, read backwards page by page; live appends show.
      const many = Array.from({ length: 35 }, (_, index) => ({
        role: 'USER',
        content: `line ${index + 1}`,
      }));
      const batch = await target.gql(
        `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`,
        { input: { sessionId: 'long', messages: many } },
        READER,
      );
      expect(batch.data.appendMessages.status).toBe('PERSISTED');
      const titled = await target.gql(
        `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { title } }`,
        { input: { id: 'long', title: 'Long chat' } },
        ADMIN,
      );
      expect(titled.errors).toBeUndefined();
      const sessions = region(page, 'Sessions');
      await page.getByLabel('Title contains').fill('Long');
      await page.getByLabel('Title contains').press('Enter');
      await counts(sessions.getByRole('listitem').filter({ hasText: 'alpha' }), 0);
      await sessions.getByRole('button', { name: 'Long chat' }).click();
      const messages = page.getByRole('list', { name: 'Messages' }).getByRole('listitem');
      await counts(messages, 30);
      await shows(messages.first(), 'line 6');
      await shows(messages.last(), 'PERSISTED');
      await page.getByRole('button', { name: 'Older messages' }).click();
      await counts(messages, 35);
      await shows(messages.first(), 'line 1');
      await hidden(page.getByRole('button', { name: 'Older messages' }));
      expect(await append(target, 'long', 'live line')).toBe('PERSISTED');
      await shows(messages.last(), 'live line');

      // Deleting a session asks first.
      await page.getByLabel('Title contains').fill('');
      await page.getByLabel('Title contains').press('Enter');
      const alpha = sessions.getByRole('listitem').filter({ hasText: 'alpha' });
      await alpha.getByRole('button', { name: 'Delete session' }).click();
      await shows(dialog, 'Delete session alpha');
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      await counts(alpha, 0);
      const gone = await target.gql(`query { session(id: "alpha") { id } }`, {}, ADMIN);
      expect(gone.data.session).toBeNull();

      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    },
  );
});
