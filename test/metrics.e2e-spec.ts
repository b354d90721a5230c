import { readFile } from 'node:fs/promises';
import { appendMessage, eventually, faultSuite } from './support/fault-helpers.js';
import { liveClient, refusedUpgrade, subscribe } from './support/live-client.js';
import { type ServerProcess } from './support/server-process.js';

// Issue 21, item 5: the metrics an on-call team alerts on, from a real server process: every
// labelled series there from the start, each moving when its event happens, and the dashboard
// and alert rules under ops/ querying only what /metrics really exports.
const TEST_TIMEOUT_MS = 60_000;

const { faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS, {
  DB_RETRY_INTERVAL_MS: '200',
});

/** The samples of a /metrics text, by series (`name{labels}` as printed). */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    found.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return found;
}

async function scrape(target: ServerProcess): Promise<Map<string, number>> {
  const response = await target.get('/metrics');
  expect(response.status).toBe(200);
  return samples(response.text);
}

/** The values of `series` now, in order (undefined for one that is absent). */
async function values(target: ServerProcess, series: string[]): Promise<(number | undefined)[]> {
  const now = await scrape(target);
  return series.map((name) => now.get(name));
}

const ZERO_AT_START = [
  'scribe_appends_total{status="persisted"}',
  'scribe_appends_total{status="queued"}',
  'scribe_appends_total{status="buffered"}',
  'scribe_set_aside_total{reason="refused"}',
  'scribe_set_aside_total{reason="corrupt"}',
  'scribe_refusals_total{reason="http_rate_limited"}',
  'scribe_refusals_total{reason="http_refused"}',
  'scribe_refusals_total{reason="live_rate_limited"}',
  'scribe_refusals_total{reason="live_full"}',
  'scribe_refusals_total{reason="live_refused"}',
  'scribe_append_duration_seconds_count{status="persisted"}',
  'scribe_append_duration_seconds_count{status="queued"}',
  'scribe_append_duration_seconds_count{status="buffered"}',
  'scribe_append_duration_seconds_count{status="failed"}',
  'scribe_graphql_request_duration_seconds_count{operation_type="mutation",operation_name="appendMessage"}',
  'scribe_graphql_request_duration_seconds_count{operation_type="query",operation_name="session"}',
  'scribe_graphql_request_duration_seconds_count{operation_type="query",operation_name="other"}',
  'scribe_graphql_request_duration_seconds_count{operation_type="unknown",operation_name="other"}',
  'scribe_full_load_duration_seconds_count',
  'scribe_spool_oldest_age_seconds',
  'scribe_spool_set_aside',
  'scribe_subscriptions',
  'scribe_appends_in_flight',
];

describe('/metrics', () => {
  faultTest('has every labelled series at 0 right after start', async () => {
    const target = await server({ DATA_DIR: await dataDirectory() });
    const now = await scrape(target);
    expect(Object.fromEntries(ZERO_AT_START.map((name) => [name, now.get(name)]))).toEqual(
      Object.fromEntries(ZERO_AT_START.map((name) => [name, 0])),
    );
    expect(now.get('scribe_database_up')).toBe(1);
    // Bounded: no series for an operation name a client made up.
    await target.gql('query made_up_by_a_client { __typename }');
    const names = [...(await scrape(target)).keys()].join('\n');
    expect(names).not.toContain('made_up_by_a_client');
  });

  faultTest('moves each metric when its event happens', async () => {
    const dataDir = await dataDirectory();
    const target = await server({
      DATA_DIR: dataDir,
      MAX_REFUSALS_PER_MINUTE: '2',
      TRUST_PROXY: 'loopback',
    });

    // An append stored: its count, its latency, its GraphQL operation.
    expect((await appendMessage(target, 'counted', 'one')).status).toBe('PERSISTED');
    expect(
      await values(target, [
        'scribe_appends_total{status="persisted"}',
        'scribe_append_duration_seconds_count{status="persisted"}',
        'scribe_graphql_request_duration_seconds_count{operation_type="mutation",operation_name="appendMessage"}',
      ]),
    ).toEqual([1, 1, 1]);

    // A read of the whole session loads it from the database.
    const read = await target.gql(
      'query($id: ID!) { session(id: $id) { messages(first: 10) { edges { node { id } } } } }',
      { id: 'counted' },
    );
    expect(read.errors).toBeUndefined();
    expect(
      await values(target, [
        'scribe_full_load_duration_seconds_count',
        'scribe_graphql_request_duration_seconds_count{operation_type="query",operation_name="session"}',
      ]),
    ).toEqual([1, 1]);

    // The database held by another process: down, and the journal's oldest message ages.
    const holder = await lockDatabase(dataDir);
    expect((await appendMessage(target, 'counted', 'two')).status).toBe('QUEUED');
    await eventually(async () =>
      expect(
        await values(target, [
          'scribe_database_up',
          'scribe_appends_total{status="queued"}',
          'scribe_append_duration_seconds_count{status="queued"}',
        ]),
      ).toEqual([0, 1, 1]),
    );
    await eventually(async () =>
      expect((await scrape(target)).get('scribe_spool_oldest_age_seconds')).toBeGreaterThan(0),
    );
    await holder.release();
    await eventually(async () =>
      expect(
        await values(target, ['scribe_database_up', 'scribe_spool_oldest_age_seconds']),
      ).toEqual([1, 0]),
    );

    // A live subscription counts while it runs.
    const ws = target.url.replace(/^http/, 'ws') + '/graphql';
    const client = liveClient(ws);
    const live = subscribe(
      client,
      'subscription($id: ID!) { messageAppended(sessionId: $id) { node { id } } }',
      { id: 'counted' },
      'messageAppended',
    );
    await eventually(async () =>
      expect((await scrape(target)).get('scribe_subscriptions')).toBe(1),
    );
    live.stop();
    await client.dispose();
    await eventually(async () =>
      expect((await scrape(target)).get('scribe_subscriptions')).toBe(0),
    );

    // Refusals. A bad token over the WebSocket, from this test's address; then a client behind
    // the (trusted) loopback proxy, 192.0.2.1, refused twice over HTTP, spends its budget (2) and
    // is turned away over HTTP and WebSocket alike. This address keeps budget left to scrape.
    const refusedLive = liveClient(ws, { authorization: 'Bearer not-a-token' });
    const refusedSubscription = subscribe(
      refusedLive,
      'subscription($id: ID!) { messageAppended(sessionId: $id) { node { id } } }',
      { id: 'counted' },
      'messageAppended',
    );
    await refusedSubscription.ended;
    await refusedLive.dispose();
    const proxied = { 'x-forwarded-for': '192.0.2.1' };
    const bad = { ...proxied, authorization: 'Bearer not-a-token' };
    expect((await target.gql('{ __typename }', {}, bad)).status).toBe(401);
    expect((await target.gql('{ __typename }', {}, bad)).status).toBe(401);
    expect((await target.gql('{ __typename }', {}, proxied)).status).toBe(429);
    expect(await refusedUpgrade(ws, proxied)).toBe(429);
    expect(
      await values(target, [
        'scribe_refusals_total{reason="http_refused"}',
        'scribe_refusals_total{reason="live_refused"}',
        'scribe_refusals_total{reason="http_rate_limited"}',
        'scribe_refusals_total{reason="live_rate_limited"}',
      ]),
    ).toEqual([2, 1, 1, 1]);
  });

  faultTest('exports every metric the ops/ dashboard and alert rules query', async () => {
    const target = await server({ DATA_DIR: await dataDirectory() });
    const exported = new Set(
      [...(await scrape(target)).keys()].map((series) => series.replace(/\{.*$/, '')),
    );
    const queried = new Set<string>();
    for (const file of ['ops/grafana/scribe-dashboard.json', 'ops/prometheus/scribe-alerts.yml']) {
      const text = await readFile(file, 'utf8');
      for (const [name] of text.matchAll(/\bscribe_[a-z0-9_]+/g)) queried.add(name);
    }
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((name) => !exported.has(name)).sort()).toEqual([]);
  });
});
