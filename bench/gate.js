// SessionResolveGate benchmarks: many concurrent full reads of one cold, large session, and
// the latency of cheap reads while full loads hold every slot.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillSession, get, load, mib, post, sampleRss, startServer } from './lib.js';

const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
const FULL_READ = `query($id: ID!) { session(id: $id) { revision messages(first: 1000) { totalCount edges { node { id content } } } } }`;
const METADATA = `query($id: ID!) { session(id: $id) { id revision messageCount } }`;

async function metric(url, name) {
  const { text } = await get(url, '/metrics');
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/**
 * In-process, side by side on one database: 64 concurrent full loads of one cold 5,000-message
 * session through the gate, and the same 64 straight to the database (the naive path).
 */
export async function coldFanOutInProcess() {
  const dataDir = await mkdtemp(join(tmpdir(), 'scribe-bench-gate-'));
  const { NestFactory } = await import('@nestjs/core');
  const { ScribeModule } = await import('../dist/scribe.module.js');
  const { ScribeConfig } = await import('../dist/config/scribe-config.js');
  const { TranscriptService } = await import('../dist/transcript/transcript.service.js');
  const { SessionQueries } = await import('../dist/database/session-queries.js');
  const { SessionResolveGate } = await import('../dist/session/session-resolve-gate.js');
  const app = await NestFactory.createApplicationContext(ScribeModule.forRoot({ dataDir }), {
    logger: ['error'],
  });
  try {
    const transcripts = app.get(TranscriptService);
    const sessions = app.get(SessionQueries);
    const config = app.get(ScribeConfig);
    const content = 'x'.repeat(400);
    for (let start = 0; start < 5000; start += 1000) {
      await transcripts.append(
        'big',
        Array.from({ length: 1000 }, (_, i) => ({
          role: 'USER',
          content: `${start + i}: ${content}`,
        })),
      );
    }
    const measure = async (label, readOnce) => {
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      let peak = rssBefore;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const started = performance.now();
      const results = await Promise.all(Array.from({ length: 64 }, readOnce));
      const elapsed = performance.now() - started;
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      if (results.some((result) => result?.messages.length !== 5000))
        throw new Error(`short read: ${results[0]?.messages.length}`);
      return { label, elapsed, growth: peak - rssBefore };
    };
    for (let round = 0; round < 2; round++) {
      let loads = 0;
      const gate = new SessionResolveGate(
        {
          loadFull: (id) => (loads++, sessions.loadFull(id)),
          loadMetadata: (id) => sessions.findMetadata(id),
        },
        {
          concurrency: config.sessionResolveConcurrency,
          timeoutMs: 60_000,
          cacheSize: 100,
          cacheMaxBytes: config.sessionCacheMaxBytes,
        },
      );
      const gated = await measure('through the gate', () => gate.resolveFull('big'));
      const naive = await measure('naive (no gate)', () => sessions.loadFull('big'));
      if (round === 0) continue; // the first round warms the JIT and the page cache
      console.log('\n64 concurrent full reads of one cold 5,000-message session (in-process):');
      for (const result of [gated, naive]) {
        console.log(
          `  ${result.label.padEnd(17)} last answer after ${result.elapsed.toFixed(0).padStart(5)} ms, peak RSS growth ${mib(result.growth)}`,
        );
      }
      console.log(`  full loads through the gate: ${loads}; naive: 64`);
    }
  } finally {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The same over HTTP against a started server: full loads counted from /metrics. */
export async function coldFanOutOverHttp() {
  const server = await startServer({});
  try {
    await fillSession(server.url, 'big', 5000);
    const loadsBefore = await metric(server.url, 'scribe_session_full_loads_total');
    const rss = sampleRss(server.pid);
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 64 }, () =>
        post(server.url, { query: FULL_READ, variables: { id: 'big' } }),
      ),
    );
    const elapsed = performance.now() - started;
    const peak = await rss.stop();
    if (answers.some((answer) => answer.errors)) throw new Error(JSON.stringify(answers[0].errors));
    const loads = (await metric(server.url, 'scribe_session_full_loads_total')) - loadsBefore;
    console.log(
      '\n64 concurrent GraphQL full reads of one cold 5,000-message session (first: 1000 each):',
    );
    console.log(
      `  full loads ${loads}, last answer after ${elapsed.toFixed(0)} ms, server peak RSS ${mib(peak)}`,
    );
  } finally {
    await server.stop();
  }
}

/**
 * p99 of a metadata-only read and of a fresh cache hit, idle and while two clients keep both
 * slots busy with full loads of large sessions that are kept stale by a writer.
 */
export async function cheapReadsUnderLoad() {
  const server = await startServer({ SESSION_RESOLVE_CONCURRENCY: '2' });
  // A second instance on the same SQLite file writes, so the first one's cached copies go
  // stale and every read of a heavy session is a full load (its own writes would be applied
  // to the cache in place).
  const writer = await startServer({ DATA_DIR: server.dataDir });
  try {
    await fillSession(server.url, 'heavy-a', 5000);
    await fillSession(server.url, 'heavy-b', 5000);
    await fillSession(server.url, 'cached', 50);
    await post(server.url, { query: FULL_READ, variables: { id: 'cached' } });
    const cheap = async () => ({
      metadata: await load({
        url: server.url,
        clients: 4,
        durationMs: 3000,
        makeBody: () => ({ query: METADATA, variables: { id: 'heavy-a' } }),
      }),
      hit: await load({
        url: server.url,
        clients: 4,
        durationMs: 3000,
        makeBody: () => ({ query: FULL_READ, variables: { id: 'cached' } }),
      }),
    });
    const idle = await cheap();
    let busy = true;
    const heavyLoops = ['heavy-a', 'heavy-b'].map(async (id) => {
      let i = 0;
      while (busy) {
        // A write makes the cached copy stale, so the next read is a full load again.
        await post(writer.url, {
          query: APPEND_MANY,
          variables: {
            input: { sessionId: id, messages: [{ role: 'USER', content: `more ${i++}` }] },
          },
        });
        await post(server.url, { query: FULL_READ, variables: { id } });
      }
    });
    const loadsBefore = await metric(server.url, 'scribe_session_full_loads_total');
    const underLoad = await cheap();
    busy = false;
    await Promise.all(heavyLoops);
    const loads = (await metric(server.url, 'scribe_session_full_loads_total')) - loadsBefore;
    console.log(
      '\nCheap reads (4 clients) while two full loads of 5,000-message sessions keep both slots busy:',
    );
    console.log(
      `  metadata-only p99: idle ${idle.metadata.p99.toFixed(2)} ms, under load ${underLoad.metadata.p99.toFixed(2)} ms (${(underLoad.metadata.p99 / idle.metadata.p99).toFixed(2)}x)`,
    );
    console.log(
      `  fresh cache hit p99: idle ${idle.hit.p99.toFixed(2)} ms, under load ${underLoad.hit.p99.toFixed(2)} ms (${(underLoad.hit.p99 / idle.hit.p99).toFixed(2)}x)`,
    );
    console.log(`  full loads during the measurement: ${loads}`);
  } finally {
    await writer.stop({ keepData: true });
    await server.stop();
  }
}
