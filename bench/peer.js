// Scribe against PostGraphile 5 (bench/peer-server.js) on the same PostgreSQL: what a team
// would run instead, generating a GraphQL API from a table. Same work on both sides:
// - one database, migrated by Scribe; the peer's tables in schema `peer` are copies of Scribe's
//   (LIKE … INCLUDING ALL: the same columns, indexes and search trigger);
// - the peer writes through a SQL function, insert_messages(session_id, messages jsonb), that
//   bumps the session's count and revision under its row lock as Scribe does, exposed by
//   PostGraphile as the mutation insertMessages; both commit before they answer;
// - the same rows: a 1,000-message session to page through, filled alike.
// One server alive at a time, pinned as the other bench sections pin theirs; for each work a
// warm-up, then a measured window; rounds alternate which server goes first. CPU per request of
// each server and of PostgreSQL (every `postgres` process) comes from /proc.
import { readFile, readdir } from 'node:fs/promises';
import pg from 'pg';
import { cpuMsOf, fillSession, loadWithCpu, median, startServer, withPinnedLoad } from './lib.js';
import { typenameFloors } from './floors.js';
import { onFreshPostgres } from './raw-postgres.js';

const CLIENTS = 32;
const SECONDS = Number(process.env.BENCH_PEER_SECONDS ?? 10);
const WARM_UP_SECONDS = Number(process.env.BENCH_PEER_WARM_UP_SECONDS ?? 3);
const ROUNDS = 3;
const PAGE_SESSION = 'peer-page';
const PAGE_MESSAGES = 1000;
const BATCH = 100;

const PEER_SCHEMA = `
CREATE SCHEMA peer;
CREATE TABLE peer.sessions (LIKE public.sessions INCLUDING ALL);
CREATE TABLE peer.messages (LIKE public.messages INCLUDING ALL);
ALTER TABLE peer.messages ADD FOREIGN KEY (session_id) REFERENCES peer.sessions (id) ON DELETE CASCADE;
CREATE TRIGGER messages_search BEFORE INSERT OR UPDATE OF content ON peer.messages
  FOR EACH ROW EXECUTE FUNCTION public.scribe_messages_search();
CREATE FUNCTION peer.insert_messages(session_id text, messages jsonb) RETURNS SETOF peer.messages
LANGUAGE sql VOLATILE AS $$
  WITH now_ms AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS at),
  session AS (
    INSERT INTO peer.sessions AS s (id, created_at, updated_at, message_count, revision)
    SELECT insert_messages.session_id, at, at, jsonb_array_length(messages), 1 FROM now_ms
    ON CONFLICT (id) DO UPDATE SET message_count = s.message_count + excluded.message_count,
      revision = s.revision + 1, updated_at = excluded.updated_at
    RETURNING message_count - jsonb_array_length(messages) AS base, revision
  )
  INSERT INTO peer.messages (id, session_id, order_key, role, content, client_message_id,
    accepted_at, stored_at, commit_seq, created_at)
  SELECT gen_random_uuid()::text, insert_messages.session_id,
    lpad((session.base + m.position)::text, 16, '0'), m.value->>'role', m.value->>'content',
    m.value->>'clientMessageId', now_ms.at, now_ms.at, session.revision, now_ms.at
  FROM session, now_ms, jsonb_array_elements(messages) WITH ORDINALITY AS m(value, position)
  RETURNING *;
$$;
-- The same 1,000 messages as fillSession() appends to Scribe's session.
SELECT count(*) FROM peer.insert_messages('${PAGE_SESSION}', (
  SELECT jsonb_agg(jsonb_build_object(
    'role', CASE WHEN i % 2 = 1 THEN 'ASSISTANT' ELSE 'USER' END,
    'content', i || ': ' || repeat('x', 400)) ORDER BY i)
  FROM generate_series(0, ${PAGE_MESSAGES - 1}) AS i));
`;

const TYPENAME = { query: '{ __typename }' };
const message = (client, i) => ({ role: 'USER', content: `message ${i} of client ${client}` });
const batch = (client, i) => Array.from({ length: BATCH }, (_, n) => message(client, `${i}.${n}`));

const sides = {
  Scribe: {
    start: (url, cpu) => startServer({ DATABASE_URL: url }, { cpu }),
    typename: () => TYPENAME,
    page: () => ({
      query: `query($id: ID!) { session(id: $id) { messages(first: 100) { edges { cursor node { id role content createdAt } } pageInfo { hasNextPage endCursor } } } }`,
      variables: { id: PAGE_SESSION },
    }),
    pageCheck: (answer) => answer.data?.session?.messages?.edges?.length === 100,
    append: (client, i) => ({
      query: `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id } } }`,
      variables: { input: { sessionId: `peer-${client}`, ...message(client, i) } },
    }),
    appendCheck: (answer) => answer.data?.appendMessage?.status === 'PERSISTED',
    batch: (client, i) => ({
      query: `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status messages { id } } }`,
      variables: { input: { sessionId: `peer-${client}`, messages: batch(client, i) } },
    }),
    batchCheck: (answer) =>
      answer.data?.appendMessages?.status === 'PERSISTED' &&
      answer.data.appendMessages.messages.length === BATCH,
  },
  PostGraphile: {
    start: (url, cpu) =>
      startServer({ DATABASE_URL: url }, { cpu, script: 'bench/peer-server.js' }),
    typename: () => TYPENAME,
    page: () => ({
      query: `query($id: String!) { allMessages(condition: { sessionId: $id }, orderBy: [SESSION_ID_ASC, ORDER_KEY_ASC], first: 100) { edges { cursor node { rowId role content createdAt } } pageInfo { hasNextPage endCursor } } }`,
      variables: { id: PAGE_SESSION },
    }),
    pageCheck: (answer) => answer.data?.allMessages?.edges?.length === 100,
    append: (client, i) => ({
      query: `mutation($sessionId: String!, $messages: JSON!) { insertMessages(input: { sessionId: $sessionId, messages: $messages }) { result { rowId } } }`,
      variables: { sessionId: `peer-${client}`, messages: [message(client, i)] },
    }),
    appendCheck: (answer) => answer.data?.insertMessages?.result?.length === 1,
    batch: (client, i) => ({
      query: `mutation($sessionId: String!, $messages: JSON!) { insertMessages(input: { sessionId: $sessionId, messages: $messages }) { result { rowId } } }`,
      variables: { sessionId: `peer-${client}`, messages: batch(client, i) },
    }),
    batchCheck: (answer) => answer.data?.insertMessages?.result?.length === BATCH,
  },
};

const works = [
  { name: '{ __typename }', body: 'typename', goal: 0.8 },
  { name: 'page read, first 100 of 1,000', body: 'page', check: 'pageCheck', goal: 1 },
  { name: 'single append', body: 'append', check: 'appendCheck', goal: 1 },
  { name: `batch of ${BATCH}`, body: 'batch', check: 'batchCheck', goal: 1, perRequest: BATCH },
];

/** CPU ms of every process named `postgres` (the server and its backends). */
async function postgresCpuMs() {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if ((await readFile(`/proc/${entry}/comm`, 'utf8')).trim() !== 'postgres') continue;
      total += await cpuMsOf(entry);
    } catch {
      // It exited between the listing and the read.
    }
  }
  return total;
}

async function measureWork(server, side, work) {
  const { otherCpu, ...result } = await loadWithCpu(server, {
    clients: CLIENTS,
    warmUpSeconds: WARM_UP_SECONDS,
    seconds: SECONDS,
    makeBody: side[work.body],
    check: work.check && side[work.check],
    otherCpuMs: postgresCpuMs,
  });
  return { ...result, postgresCpu: otherCpu };
}

const row = (label, r, perRequest = 1) =>
  `    ${label.padEnd(13)} ${(r.perSecond * perRequest).toFixed(0).padStart(7)} ${perRequest > 1 ? 'msg/s' : 'req/s'}  p99 ${r.p99.toFixed(1).padStart(6)} ms  CPU/request: server ${r.serverCpu.toFixed(2)} ms, PostgreSQL ${r.postgresCpu.toFixed(2)} ms  (${r.requests} requests, ${r.errors} errors)`;

/** The peer section: returns `{ name, value, atLeast }` figures, Scribe / PostGraphile. */
export function againstPostGraphile() {
  return onFreshPostgres(
    'Scribe against PostGraphile',
    (url) =>
      withPinnedLoad(async ({ serverCpu }) => {
        // Scribe migrates the database; the peer's schema copies its tables.
        const first = await startServer({ DATABASE_URL: url });
        await fillSession(first.url, PAGE_SESSION, PAGE_MESSAGES);
        await first.stop();
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(PEER_SCHEMA);
        await client.end();

        const results = Object.fromEntries(works.map((work) => [work.name, []]));
        for (let round = 0; round < ROUNDS; round++) {
          const order = round % 2 ? ['PostGraphile', 'Scribe'] : ['Scribe', 'PostGraphile'];
          const measured = {};
          for (const name of order) {
            const server = await sides[name].start(url, serverCpu);
            try {
              measured[name] = [];
              for (const work of works) {
                measured[name].push(await measureWork(server, sides[name], work));
              }
            } finally {
              await server.stop();
            }
          }
          works.forEach((work, index) =>
            results[work.name].push({
              Scribe: measured.Scribe[index],
              PostGraphile: measured.PostGraphile[index],
            }),
          );
        }

        const pinned =
          serverCpu === undefined ? 'unpinned' : `server on CPU ${serverCpu}, clients on another`;
        console.log(
          `\nScribe against PostGraphile 5 on the same PostgreSQL, ${CLIENTS} keep-alive clients, ${ROUNDS} alternating rounds of ${SECONDS} s after ${WARM_UP_SECONDS} s of warm-up, one server at a time (${pinned}):`,
        );
        const figures = [];
        for (const work of works) {
          console.log(`  ${work.name}:`);
          for (const [index, round] of results[work.name].entries()) {
            console.log(row(`round ${index + 1} Scribe`, round.Scribe, work.perRequest));
            console.log(row('  PostGraphile', round.PostGraphile, work.perRequest));
          }
          const ratios = results[work.name].map(
            (round) => round.Scribe.perSecond / round.PostGraphile.perSecond,
          );
          const of = (side, key) => median(results[work.name].map((round) => round[side][key]));
          console.log(
            `    medians: Scribe ${of('Scribe', 'serverCpu').toFixed(2)} ms CPU/request (PostgreSQL ${of('Scribe', 'postgresCpu').toFixed(2)}), PostGraphile ${of('PostGraphile', 'serverCpu').toFixed(2)} ms (PostgreSQL ${of('PostGraphile', 'postgresCpu').toFixed(2)}); Scribe / PostGraphile per round ${ratios.map((r) => r.toFixed(2)).join(', ')}`,
          );
          figures.push({
            name: `${work.name}, Scribe / PostGraphile`,
            value: median(ratios),
            atLeast: work.goal,
          });
        }
        await typenameFloors(url, serverCpu);
        return figures;
      }),
    [],
  );
}
