import { createClient, type Client } from 'graphql-ws';
import { ScribeErrorCode } from '../src/common/errors/scribe-error-code.js';

// The admin console: plain DOM over Scribe's GraphQL API, with an admin token kept in
// sessionStorage (never in a URL). The figures are polled, one request at a time, at most
// once a second (no subscription carries them); an open transcript follows messageAppended.
// A section is drawn again only when its data changed, so a keyboard user's focus stays put.

const GRAPHQL = new URL(document.body.dataset.graphqlPath ?? '/graphql', location.href).href;
const TOKEN_KEY = 'scribe-admin-token';
const POLL_MS = 1000;
const PAGE = 30;
/** The refusals that mean the token no longer serves: the console signs out. */
const SIGN_OUT_CODES: readonly string[] = [
  ScribeErrorCode.Unauthenticated,
  ScribeErrorCode.Forbidden,
];

const STATUS = `query Status {
  pendingStatus { databaseWritable lastDatabaseError lastDatabaseErrorAt totalPending
    sessions { sessionId pending hasSpooledMessages } }
  spoolStatus { path writable error messages bytes oldestAgeMs setAsideCount
    setAside { id source reason at sessionId messageId } }
  gateStatus { activeLoads waitingLoads inFlight cacheSize cacheCapacity concurrency }
}`;
// Apart from the figures, which are in memory: a database outage must not hide them.
const SESSIONS = `query Sessions($filter: SessionFilter) {
  sessions(first: 50, filter: $filter) { totalCount edges { node { id title messageCount } } }
}`;
const MESSAGE = 'cursor node { id role content status createdAt }';
const PAGE_QUERY = `query Page($id: ID!, $before: String) { session(id: $id) {
  messages(last: ${PAGE}, before: $before) { pageInfo { hasPreviousPage startCursor }
    edges { ${MESSAGE} } } } }`;
const LIVE = `subscription Live($id: ID!) { messageAppended(sessionId: $id) { ${MESSAGE} } }`;

interface Edge {
  cursor: string;
  node: { id: string; role: string; content: string; status: string; createdAt: string };
}
interface Status {
  pendingStatus: {
    databaseWritable: boolean;
    lastDatabaseError: string | null;
    lastDatabaseErrorAt: string | null;
    totalPending: number;
    sessions: { sessionId: string; pending: number; hasSpooledMessages: boolean }[];
  };
  spoolStatus: {
    path: string;
    writable: boolean;
    error: string | null;
    messages: number;
    bytes: number;
    oldestAgeMs: number | null;
    setAsideCount: number;
    setAside: {
      id: string | null;
      source: string;
      reason: string;
      at: number | null;
      sessionId: string | null;
      messageId: string | null;
    }[];
  };
  gateStatus: Record<string, number>;
}
interface Sessions {
  sessions: {
    totalCount: number;
    edges: { node: { id: string; title: string | null; messageCount: number } }[];
  };
}

/** A GraphQL error, with its code (UNAUTHENTICATED, FORBIDDEN, …) and the server's reason. */
class Refusal extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

type Child = Node | string | number | null | undefined;

type Attribute = string | number | boolean | undefined | EventListener;

/** An element with attributes (functions are listeners: `onclick`) and children. */
function h(tag: string, attributes: Record<string, Attribute> = {}, ...children: Child[]) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== false) element.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) element.append(child as Node | string);
  }
  return element;
}

const rows = (pairs: [string, Child][]) =>
  pairs.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]);

let token = sessionStorage.getItem(TOKEN_KEY);
let signedIn = false;
let poll: number | undefined;
const drawn = new Map<string, string>();

async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch(GRAPHQL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token ?? ''}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json().catch(() => ({}))) as {
    data?: T;
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  const error = body.errors?.[0];
  if (error) throw new Refusal(error.message, error.extensions?.code ?? 'ERROR');
  if (!body.data) throw new Refusal(`HTTP ${response.status}`, 'HTTP');
  return body.data;
}

/** Draws `section` again only when `data` differs from what it shows. */
function draw(section: string, data: unknown, render: () => Child[]): void {
  const key = JSON.stringify(data);
  if (drawn.get(section) === key) return;
  drawn.set(section, key);
  byId(section).replaceChildren(...(render() as (Node | string)[]));
}

const say = (text: string) => (byId('status').textContent = text);
const time = (value: string | number | null) =>
  value === null ? '—' : new Date(value).toLocaleString();
const seconds = (ms: number | null) => (ms === null ? '—' : `${Math.round(ms / 1000)} s`);

function render(status: Status): void {
  const { pendingStatus: pending, spoolStatus: spool, gateStatus: gate } = status;
  draw('database', pending, () =>
    rows([
      [
        'State',
        h(
          'span',
          { class: pending.databaseWritable ? 'good' : 'bad' },
          pending.databaseWritable ? 'Writable' : 'Down',
        ),
      ],
      ['Last error', pending.lastDatabaseError ?? 'none'],
      ['At', time(pending.lastDatabaseErrorAt)],
    ]),
  );
  draw('pending', pending, () => [
    h('p', {}, `Pending messages: `, h('strong', { id: 'pending-total' }, pending.totalPending)),
    pending.sessions.length === 0
      ? h('p', { class: 'muted' }, 'No session has messages pending.')
      : h(
          'ul',
          {},
          ...pending.sessions.map((one) =>
            h(
              'li',
              {},
              `${one.sessionId}: ${one.pending}`,
              one.hasSpooledMessages ? ' (some on disk only)' : '',
            ),
          ),
        ),
  ]);
  draw('spool', { ...spool, setAside: undefined }, () =>
    rows([
      ['Records', h('span', { id: 'spool-records' }, spool.messages)],
      ['Bytes', spool.bytes],
      ['Oldest', seconds(spool.oldestAgeMs)],
      ['Writable', spool.writable ? 'yes' : h('span', { class: 'bad' }, `no: ${spool.error}`)],
      ['Path', spool.path],
    ]),
  );
  draw('set-aside', spool.setAside, () => [
    h('p', {}, `Open entries: ${spool.setAsideCount}`),
    h(
      'ul',
      {},
      ...spool.setAside.map((entry) =>
        h(
          'li',
          {},
          h('div', {}, h('strong', {}, entry.reason)),
          h(
            'div',
            { class: 'muted' },
            `${entry.source}${entry.sessionId ? ` · session ${entry.sessionId}` : ''} · ${time(entry.at)}`,
          ),
          entry.id === null ? null : actionButtons(entry.id, entry.reason),
        ),
      ),
    ),
  ]);
  draw('gate', gate, () =>
    rows([
      ['Loads', `${gate.activeLoads} of ${gate.concurrency} slots`],
      ['Waiting', gate.waitingLoads],
      ['In flight', gate.inFlight],
      ['Cache', `${gate.cacheSize} of ${gate.cacheCapacity}`],
    ]),
  );
}

function renderSessions({ sessions }: Sessions): void {
  draw('session-list', sessions, () => [
    h('p', {}, `${sessions.totalCount} session(s)`),
    h(
      'ul',
      {},
      ...sessions.edges.map(({ node }) =>
        h(
          'li',
          {},
          h(
            'button',
            { type: 'button', onclick: () => void openTranscript(node.id) },
            node.title ?? node.id,
          ),
          ` ${node.id} · ${node.messageCount} message(s) `,
          h(
            'button',
            {
              type: 'button',
              'data-session': node.id,
              onclick: () => void deleteSession(node.id),
            },
            'Delete session',
          ),
        ),
      ),
    ),
  ]);
}

function actionButtons(id: string, reason: string): HTMLElement {
  const act = (field: string, verb: string, destroys: boolean) => () =>
    void (async () => {
      const question = `${verb} this entry for good? It was set aside: ${reason}`;
      if (destroys && !(await confirmed(question))) return;
      await run(
        `mutation($input: SetAsideActionInput!) { ${field}(input: $input) { id } }`,
        { input: { id } },
        `${verb}: done`,
      );
    })();
  return h(
    'div',
    {},
    h('button', { type: 'button', onclick: act('reDriveSetAside', 'Re-drive', false) }, 'Re-drive'),
    h('button', { type: 'button', onclick: act('dropSetAside', 'Drop', true) }, 'Drop'),
  );
}

/** Asks in a modal dialog (Escape cancels); true when confirmed. */
function confirmed(question: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>('confirm');
  byId('confirm-text').textContent = question;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) =>
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }),
  );
}

/** Runs an action, says how it went, and refreshes at once. */
async function run(query: string, variables: Record<string, unknown>, done: string) {
  try {
    await gql(query, variables);
    say(done);
  } catch (error) {
    say(`Refused: ${(error as Error).message}`);
  }
  schedule(0);
}

async function deleteSession(id: string): Promise<void> {
  if (!(await confirmed(`Delete session ${id} and all its messages for good?`))) return;
  await run(
    'mutation($id: ID!) { deleteSession(id: $id) { deleted } }',
    { id },
    `Session ${id} deleted`,
  );
  if (transcript?.id === id) closeTranscript();
}

let transcript: { id: string; before: string | null; live: Client } | undefined;

function messageItem({ node }: Edge): HTMLElement {
  return h(
    'li',
    { 'data-id': node.id },
    h('strong', {}, node.role),
    ` ${node.content} `,
    h('span', { class: 'muted' }, `${node.status} · ${time(node.createdAt)}`),
  );
}

async function openTranscript(id: string): Promise<void> {
  closeTranscript();
  const list = h('ol', { 'aria-label': 'Messages' });
  const older = h('button', { type: 'button', hidden: true }, 'Older messages');
  byId('transcript').replaceChildren(h('h3', {}, `Transcript of ${id}`), older, list);
  const live = createClient({
    url: GRAPHQL.replace(/^http/, 'ws'),
    connectionParams: () => ({ authorization: `Bearer ${token ?? ''}` }),
  });
  transcript = { id, before: null, live };
  const page = async () => {
    const data = await gql<{
      session: {
        messages: {
          pageInfo: { hasPreviousPage: boolean; startCursor: string | null };
          edges: Edge[];
        };
      } | null;
    }>(PAGE_QUERY, { id, before: transcript?.before });
    const messages = data.session?.messages;
    if (!messages) return;
    list.prepend(...messages.edges.map(messageItem));
    if (transcript) transcript.before = messages.pageInfo.startCursor;
    older.hidden = !messages.pageInfo.hasPreviousPage;
  };
  older.addEventListener('click', () => void page());
  live.subscribe<{ messageAppended: Edge }>(
    { query: LIVE, variables: { id } },
    {
      next: ({ data }) => data && list.append(messageItem(data.messageAppended)),
      error: () => say(`Live updates of ${id} ended`),
      complete: () => undefined,
    },
  );
  await page().catch((error: Error) => say(`Refused: ${error.message}`));
}

function closeTranscript(): void {
  void transcript?.live.dispose();
  transcript = undefined;
  byId('transcript').replaceChildren();
}

function schedule(delay: number): void {
  window.clearTimeout(poll);
  if (signedIn) poll = window.setTimeout(() => void refresh(), delay);
}

async function refresh(): Promise<void> {
  const titleContains = byId<HTMLInputElement>('search').value.trim();
  try {
    render(await gql<Status>(STATUS));
    const filter = titleContains ? { titleContains } : null;
    renderSessions(await gql<Sessions>(SESSIONS, { filter }));
  } catch (error) {
    if (error instanceof Refusal && SIGN_OUT_CODES.includes(error.code)) {
      signOut(`Refused: ${error.message}`);
      return;
    }
    say(`Could not refresh: ${(error as Error).message}`);
  }
  schedule(POLL_MS);
}

/** Tries the token with an admin query; any refusal is shown with the server's reason. */
async function signIn(candidate: string): Promise<void> {
  token = candidate;
  try {
    await gql('{ pendingStatus { totalPending } }');
  } catch (error) {
    signOut(`Refused: ${(error as Error).message}`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, candidate);
  signedIn = true;
  byId('sign-in').hidden = true;
  byId('console').hidden = false;
  byId('sign-in-error').textContent = '';
  say('Signed in');
  schedule(0);
}

function signOut(reason = ''): void {
  signedIn = false;
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  window.clearTimeout(poll);
  closeTranscript();
  drawn.clear();
  byId('console').hidden = true;
  byId('sign-in').hidden = false;
  byId('sign-in-error').textContent = reason;
  byId<HTMLInputElement>('token').focus();
}

byId('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  const field = byId<HTMLInputElement>('token');
  const candidate = field.value.trim();
  field.value = '';
  if (candidate) void signIn(candidate);
});
byId('sign-out').addEventListener('click', () => signOut());
byId('retry').addEventListener(
  'click',
  () => void run('mutation { retryNow }', {}, 'Retrying the database now'),
);
byId('search-form').addEventListener('submit', (event) => {
  event.preventDefault();
  schedule(0);
});
if (token) void signIn(token);
