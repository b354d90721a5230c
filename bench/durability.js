// Durability benchmarks: the cost of the queue when healthy, append latency during an outage,
// memory with every session at the cap, and the replay rate of spooled messages.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fmt, holdSqliteLock, load, mib, post, rssOf, startServer } from './lib.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;

/**
 * The queue's own cost on the healthy path, in-process: TranscriptService.append against the
 * group-commit writer it wraps, both over a store that stores nothing, side by side.
 */
export async function queueOverhead() {
  const { TranscriptService } = await import('../dist/transcript/transcript.service.js');
  const { CoalescingWriter } = await import('../dist/transcript/coalescing-writer.js');
  const { ScribeConfig } = await import('../dist/config/scribe-config.js');
  const { MetricsService } = await import('../dist/metrics/metrics.service.js');
  const { SpoolService } = await import('../dist/spool/spool.service.js');
  const store = {
    write: async (writes) => writes.map((write) => ({ stored: write.records, revision: 1 })),
    probeWrite: async () => {},
    findByClientMessageIds: async () => [],
  };
  const config = ScribeConfig.fromVariables({ DATA_DIR: '/tmp/scribe-bench-overhead' });
  const metrics = new MetricsService();
  const service = new TranscriptService(
    store,
    new SpoolService(config, metrics),
    { messagesStored() {} },
    config,
    metrics,
  );
  const writer = new CoalescingWriter(store, () => false);
  const rounds = 200_000;
  const message = { role: 'USER', content: 'hello' };
  const time = async (fn) => {
    const started = performance.now();
    const batch = [];
    for (let i = 0; i < rounds; i++) {
      batch.push(fn(i));
      if (batch.length === CLIENTS) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
    return rounds / ((performance.now() - started) / 1000);
  };
  // Alternate to spread the machine's noise over both.
  const direct = [];
  const queued = [];
  for (let round = 0; round < 3; round++) {
    direct.push(
      await time((i) =>
        writer.submit({ sessionId: `s${i % CLIENTS}`, records: [{ id: String(i) }] }),
      ),
    );
    queued.push(await time((i) => service.append(`s${i % CLIENTS}`, [message])));
  }
  const best = (values) => Math.max(...values);
  console.log(`\nQueue overhead in-process (a store that stores nothing, ${CLIENTS} in flight):`);
  console.log(`  writer alone                ${best(direct).toFixed(0).padStart(8)} appends/s`);
  console.log(`  TranscriptService.append    ${best(queued).toFixed(0).padStart(8)} appends/s`);
  console.log(
    `  per-append cost of the durability layer: ${(1e6 / best(queued) - 1e6 / best(direct)).toFixed(2)} µs ` +
      '(ids, order keys, per-session lock, queue checks)',
  );
}

/** p99 append latency with SQLite locked by another process, against the healthy p99. */
export async function outageLatency() {
  const server = await startServer({ MAX_PENDING_PER_SESSION: '200' });
  try {
    const body = (client, i) => ({
      query: APPEND,
      variables: { input: { sessionId: `outage-${client}`, role: 'USER', content: `m ${i}` } },
    });
    await load({ url: server.url, clients: CLIENTS, durationMs: 1000, makeBody: body });
    const healthy = await load({
      url: server.url,
      clients: CLIENTS,
      durationMs: DURATION_MS,
      makeBody: body,
    });
    const lock = await holdSqliteLock(join(server.dataDir, 'scribe.sqlite'));
    let onset;
    let outage;
    try {
      // Writes already in flight when the lock is taken wait out SQLite's busy timeout once.
      onset = await load({ url: server.url, clients: CLIENTS, durationMs: 2000, makeBody: body });
      outage = await load({
        url: server.url,
        clients: CLIENTS,
        durationMs: DURATION_MS,
        makeBody: body,
        check: (answer) => answer.data?.appendMessage?.status === 'QUEUED',
      });
    } finally {
      await lock.release();
    }
    console.log(
      `\nAppend latency, SQLite healthy vs locked by another process (${CLIENTS} clients):`,
    );
    console.log(`  healthy   ${fmt(healthy)}`);
    console.log(`  onset     ${fmt(onset)}  (first 2 s of the outage)`);
    console.log(
      `  locked    ${fmt(outage)}  (after the onset; answers not QUEUED counted as errors)`,
    );
    console.log(`  p99 locked / p99 healthy: ${(outage.p99 / healthy.p99).toFixed(2)}`);
  } finally {
    await server.stop();
  }
}

/** RSS with 1,000 sessions each holding the full cap of pending messages. */
export async function memoryAtCap() {
  const sessions = 1000;
  const cap = 200;
  const server = await startServer({
    MAX_PENDING_PER_SESSION: String(cap),
    DB_RETRY_INTERVAL_MS: '0',
  });
  try {
    const before = await rssOf(server.pid);
    const lock = await holdSqliteLock(join(server.dataDir, 'scribe.sqlite'));
    try {
      const messages = Array.from({ length: cap }, (_, i) => ({
        role: 'USER',
        content: `a typical chat message of about a hundred characters, number ${i}, padded out a little more.`,
      }));
      for (let start = 0; start < sessions; start += CLIENTS) {
        await Promise.all(
          Array.from({ length: Math.min(CLIENTS, sessions - start) }, (_, k) =>
            post(server.url, {
              query: APPEND_MANY,
              variables: { input: { sessionId: `cap-${start + k}`, messages } },
            }),
          ),
        );
      }
      const atCap = await rssOf(server.pid);
      console.log(`\nMemory with ${sessions} sessions x ${cap} pending messages (SQLite locked):`);
      console.log(
        `  RSS before ${mib(before)}, at the cap ${mib(atCap)} (${((atCap - before) / (sessions * cap)).toFixed(0)} bytes per pending message)`,
      );
      // One more message each must evict to the spool, not grow memory.
      for (let start = 0; start < sessions; start += CLIENTS) {
        await Promise.all(
          Array.from({ length: Math.min(CLIENTS, sessions - start) }, (_, k) =>
            post(server.url, {
              query: APPEND,
              variables: {
                input: { sessionId: `cap-${start + k}`, role: 'USER', content: 'over' },
              },
            }),
          ),
        );
      }
      console.log(
        `  after one more append per session (each evicts to the spool): ${mib(await rssOf(server.pid))}`,
      );
    } finally {
      await lock.release();
    }
  } finally {
    await server.stop();
  }
}

/** Boot replay of 10,000 spooled messages: start time with them against an empty spool. */
export async function replayRate() {
  const count = 10_000;
  const { SpoolDirectory } = await import('../dist/spool/spool-directory.js');
  const { OrderKeyGenerator } = await import('../dist/transcript/order-key.js');
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const timeStart = async (dataDir) => {
    const started = performance.now();
    const server = await startServer({ DATA_DIR: dataDir });
    const elapsed = performance.now() - started;
    await server.stop({ keepData: true });
    return { elapsed, server };
  };
  const dataDir = await mkdtemp(join(tmpdir(), 'scribe-bench-replay-'));
  try {
    // Create the database first, then measure an empty start twice (the second is the baseline).
    await timeStart(dataDir);
    const empty = await timeStart(dataDir);
    const spool = new SpoolDirectory(join(dataDir, 'pending_messages'));
    await spool.init();
    const keys = new OrderKeyGenerator();
    for (let i = 0; i < count; i++) {
      const { key, ms } = keys.next();
      await spool.write(
        {
          id: randomUUID(),
          sessionId: `replay-${i % 10}`,
          orderKey: key,
          role: 'USER',
          content: `spooled message ${i}`,
          clientMessageId: null,
          toolName: null,
          toolCallId: null,
          toolCalls: null,
          metadata: null,
          acceptedAt: ms,
        },
        i % 2 ? 'shutdown' : 'transcript_cap_drop',
      );
    }
    const replay = await timeStart(dataDir);
    const remaining = (await spool.list()).length;
    const seconds = (replay.elapsed - empty.elapsed) / 1000;
    console.log(`\nBoot replay of ${count} spooled messages (10 sessions), SQLite:`);
    console.log(
      `  start with an empty spool ${empty.elapsed.toFixed(0)} ms, with the spool ${replay.elapsed.toFixed(0)} ms`,
    );
    console.log(
      `  replay rate ≈ ${(count / seconds).toFixed(0)} messages/s; files left: ${remaining}`,
    );
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
