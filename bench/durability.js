// Durability benchmarks: what the journal costs and buys. Side by side in one run: append
// throughput while the database is locked (the journal takes them) against healthy appends;
// boot replay of 100,000 journaled messages against an empty boot; what the durable layer adds
// to a healthy append; memory with every session at the pending cap.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawSqliteInsertRate } from './raw-sqlite.js';
import { fmt, get, holdSqliteLock, load, mib, post, rssOf, startServer } from './lib.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;
const ROUNDS = 3;
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;
const ADMIN_TOKEN = 'bench';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function metric(url, name) {
  const { text } = await get(url, '/metrics');
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/** Waits until the server holds nothing pending, in memory or in the journal. */
async function drained(url) {
  for (;;) {
    const pending = await metric(url, 'scribe_pending_messages');
    const journaled = await metric(url, 'scribe_spool_messages');
    if (pending === 0 && journaled === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Append throughput at CLIENTS clients with the database healthy, against the same with the
 * SQLite write lock held by another process (every append answered QUEUED: journaled and
 * synced), in alternating rounds on one server. The outage's first second is left out: appends
 * already in flight wait out SQLite's busy timeout once.
 */
export async function outageThroughput() {
  const server = await startServer({ DB_RETRY_INTERVAL_MS: '200', ADMIN_TOKEN });
  try {
    let round = 0;
    const body = () => (client, i) => ({
      query: APPEND,
      variables: {
        input: {
          sessionId: `outage-${client}`,
          role: 'USER',
          content: `round ${round} message ${i} of client ${client}, a typical chat line`,
        },
      },
    });
    const measure = (status) =>
      load({
        url: server.url,
        clients: CLIENTS,
        durationMs: DURATION_MS / ROUNDS,
        makeBody: body(),
        check: (answer) => answer.data?.appendMessage?.status === status,
      });
    await load({
      url: server.url,
      clients: CLIENTS,
      durationMs: 1000,
      makeBody: body('PERSISTED'),
    });
    const rounds = [];
    for (; round < ROUNDS; round++) {
      const healthy = await measure('PERSISTED');
      const lock = await holdSqliteLock(join(server.dataDir, 'scribe.sqlite'));
      let outage;
      try {
        await load({
          url: server.url,
          clients: CLIENTS,
          durationMs: 1500,
          makeBody: body('QUEUED'),
        });
        outage = await measure('QUEUED');
      } finally {
        await lock.release();
      }
      const drainStarted = performance.now();
      await drained(server.url);
      rounds.push({ healthy, outage, drainMs: performance.now() - drainStarted });
    }
    console.log(
      `\nAppend throughput, SQLite healthy vs locked by another process (journal), ${CLIENTS} clients, ${ROUNDS} alternating rounds:`,
    );
    for (const [index, { healthy, outage, drainMs }] of rounds.entries()) {
      console.log(`  round ${index + 1}  healthy ${fmt(healthy)}`);
      console.log(
        `           locked  ${fmt(outage)}  (written back in ${drainMs.toFixed(0)} ms after the release)`,
      );
    }
    const ratios = rounds.map(({ healthy, outage }) => outage.perSecond / healthy.perSecond);
    console.log(
      `  outage / healthy per round: ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (goal >= 0.5)`,
    );
    return { ratio: median(ratios) };
  } finally {
    await server.stop();
  }
}

/**
 * Boot replay of 100,000 messages journaled by an instance that is gone (written with the
 * journal's own writer), against an empty boot in the same run: the server says it is ready
 * only once the journal is written back, so time to ready is time to all readable.
 */
export async function replayRate({ messages = 100_000, sessions = 100, rounds = 3 } = {}) {
  const { NodeJournalFiles } = await import('../dist/spool/node-journal-files.js');
  const { JournalIndex } = await import('../dist/spool/journal-index.js');
  const { JournalWriter } = await import('../dist/spool/journal-writer.js');
  const { SegmentNamer } = await import('../dist/spool/segment-names.js');
  const { SegmentWatch } = await import('../dist/spool/segment-loss.js');
  const { Failpoints } = await import('../dist/common/failpoints.js');
  const { OrderKeyGenerator } = await import('../dist/message/order-key.js');
  const { messageIdFor } = await import('../dist/message/message-id.js');
  const timeStart = async (dataDir) => {
    const started = performance.now();
    const server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN });
    const elapsed = performance.now() - started;
    return { elapsed, server };
  };
  const recordsOf = (dead) => {
    const keys = new OrderKeyGenerator(dead);
    return Array.from({ length: messages }, (_, n) => {
      const { key, ms } = keys.next();
      const sessionId = `replay-${n % sessions}`;
      return {
        id: messageIdFor(sessionId, `c-${n}`),
        sessionId,
        orderKey: key,
        role: 'USER',
        content: `journaled message ${n}, a typical chat line of some length`,
        clientMessageId: `c-${n}`,
        toolName: null,
        toolCallId: null,
        toolCalls: null,
        metadata: null,
        acceptedAt: ms,
      };
    });
  };
  const journal = async (dataDir, records, dead) => {
    const files = new NodeJournalFiles(join(dataDir, 'pending_messages'));
    await files.ensureDirectory();
    const index = new JournalIndex();
    const writer = new JournalWriter(
      files,
      index,
      new SegmentNamer(dead),
      new SegmentWatch(files, index),
      8 << 20,
      new Failpoints(),
    );
    for (let start = 0; start < records.length; start += 1000) {
      const appended = await writer.append(records.slice(start, start + 1000));
      if (appended.kind !== 'written') throw appended.error;
    }
    await writer.close();
  };
  console.log(
    `\nBoot replay of ${messages} journaled messages (${sessions} sessions), SQLite, ${rounds} rounds:`,
  );
  const rates = [];
  const limits = [];
  for (let round = 0; round < rounds; round++) {
    const dataDir = await mkdtemp(join(tmpdir(), 'scribe-bench-replay-'));
    try {
      // Create the database, then time an empty start (the baseline) and one with a journal.
      await (await timeStart(dataDir)).server.stop({ keepData: true });
      const empty = await timeStart(dataDir);
      await empty.server.stop({ keepData: true });
      const dead = `deadbe${String(round).padStart(2, '0')}`;
      const records = recordsOf(dead);
      // The limit: the driver alone inserting the same rows into a copy of the same database.
      const limit = await rawSqliteInsertRate(join(dataDir, 'scribe.sqlite'), records);
      limits.push(limit);
      await journal(dataDir, records, dead);
      const replay = await timeStart(dataDir);
      const stored = await metric(replay.server.url, 'scribe_spool_replays_total');
      const left = await metric(replay.server.url, 'scribe_spool_messages');
      await replay.server.stop({ keepData: true });
      const rate = messages / ((replay.elapsed - empty.elapsed) / 1000);
      rates.push(rate);
      console.log(
        `  round ${round + 1}: empty start ${empty.elapsed.toFixed(0)} ms, with the journal ${replay.elapsed.toFixed(0)} ms: ${rate.toFixed(0)} messages/s (stored ${stored}, left ${left}); the driver alone inserts ${limit.toFixed(0)} rows/s`,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  const ratios = rates.map((rate, index) => rate / limits[index]);
  console.log(
    `  replay rate, median ${median(rates).toFixed(0)} messages/s (goal >= 50,000); the driver alone, median ${median(limits).toFixed(0)} rows/s; replay / driver median ${median(ratios).toFixed(2)}`,
  );
  return { rate: median(rates), limit: median(limits), ratio: median(ratios) };
}

/**
 * What the durable layer adds to a healthy append, in-process: TranscriptService.append (ids,
 * order keys, the session lock, the retry lookup, the health check, the journal's one question
 * "does this session have records on disk?") against the group-commit writer alone, both over
 * a store that stores nothing. Then that cost as a share of a healthy append over HTTP
 * (`httpAppendsPerSecond`, measured by the caller in the same run).
 */
export async function durableLayerCost(httpAppendsPerSecond) {
  const dist = (path) => import(`../dist/${path}.js`);
  const { TranscriptService } = await dist('transcript/transcript.service');
  const { CoalescingWriter } = await dist('transcript/coalescing-writer');
  const { DurableWriter } = await dist('transcript/durable-writer');
  const { JournalReplay } = await dist('transcript/journal-replay');
  const { StoredElsewhere } = await dist('transcript/stored-elsewhere');
  const { WriteReports } = await dist('transcript/write-reports');
  const { HeldMoves } = await dist('transcript/held-moves');
  const { RetryLookup } = await dist('transcript/retry-lookup');
  const { TranscriptImporter } = await dist('transcript/transcript-importer');
  const { SessionBacklog } = await dist('transcript/session-backlog');
  const { DatabaseHealth } = await dist('database/database-health');
  const { ScribeConfig } = await dist('config/scribe-config');
  const { OrderKeyGenerator } = await dist('message/order-key');
  const { AppendIntake } = await dist('common/lifecycle/append-intake');
  const { MetricsService } = await dist('metrics/metrics.service');
  const { Failpoints } = await dist('common/failpoints');
  const { EventEmitter2 } = await import('@nestjs/event-emitter');
  const { Logger } = await import('@nestjs/common');
  const store = {
    concurrentWrites: 1,
    write: async (writes) =>
      writes.map((write) => ({ inserted: write.records, skipped: [], revision: 1 })),
    heartbeat: async () => {},
  };
  // A spool with nothing journaled: a healthy append never reaches it.
  const spool = { path: '/dev/null', find: async () => undefined };
  const index = { hasJournalOnly: () => false, isOnDisk: () => true };
  const journal = {};
  const queries = { findByClientMessageIds: async () => [], findByIds: async () => [] };
  const config = ScribeConfig.fromVariables({ DATA_DIR: '/tmp/scribe-bench-overhead' });
  const metrics = new MetricsService();
  const health = new DatabaseHealth({ isReady: true }, true, Date.now, new Logger('bench'));
  const writer = new CoalescingWriter(store, () => 'unavailable', String);
  const backlog = new SessionBacklog();
  const moves = new HeldMoves();
  const reports = new WriteReports(health, new EventEmitter2(), metrics);
  const durable = new DurableWriter(
    writer,
    spool,
    index,
    journal,
    health,
    reports,
    new JournalReplay(writer, journal, moves, reports, new StoredElsewhere(queries)),
    metrics,
    200,
    new Failpoints(),
    moves,
    new StoredElsewhere(queries),
  );
  const retries = new RetryLookup(spool, index, journal, queries);
  const orderKeys = new OrderKeyGenerator('bench001');
  const service = new TranscriptService(
    backlog,
    durable,
    {},
    health,
    spool,
    index,
    retries,
    config,
    metrics,
    orderKeys,
    new TranscriptImporter(durable, retries, queries, orderKeys, metrics),
    new AppendIntake(),
  );
  const rounds = 200_000;
  const message = { role: 'USER', content: 'hello', clientMessageId: null };
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
  const direct = [];
  const layered = [];
  for (let round = 0; round < 3; round++) {
    direct.push(
      await time((i) =>
        writer.submit({ sessionId: `s${i % CLIENTS}`, records: [{ id: String(i) }] }),
      ),
    );
    layered.push(await time((i) => service.append(`s${i % CLIENTS}`, [message])));
  }
  const best = (values) => Math.max(...values);
  const costUs = 1e6 / best(layered) - 1e6 / best(direct);
  console.log(
    `\nThe durable layer on a healthy append, in-process (a store that stores nothing, ${CLIENTS} in flight):`,
  );
  console.log(`  group-commit writer alone   ${best(direct).toFixed(0).padStart(8)} appends/s`);
  console.log(`  TranscriptService.append    ${best(layered).toFixed(0).padStart(8)} appends/s`);
  console.log(
    `  cost per append ${costUs.toFixed(2)} µs = ${((costUs / (1e6 / httpAppendsPerSecond)) * 100).toFixed(2)}% of a healthy append over HTTP here (${httpAppendsPerSecond.toFixed(0)}/s); the journal's share is one Map lookup`,
  );
}

/** Healthy append throughput over HTTP with SQLite, for durableLayerCost's denominator. */
export async function healthyAppendRate() {
  const server = await startServer({});
  try {
    const body = (client, i) => ({
      query: APPEND,
      variables: { input: { sessionId: `h-${client}`, role: 'USER', content: `m ${i}` } },
    });
    await load({ url: server.url, clients: CLIENTS, durationMs: 1000, makeBody: body });
    return (
      await load({ url: server.url, clients: CLIENTS, durationMs: DURATION_MS, makeBody: body })
    ).perSecond;
  } finally {
    await server.stop();
  }
}

/** RSS with 1,000 sessions each holding the full cap of pending messages, then one more each. */
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
      // One more message each evicts the oldest from memory: its copy in the journal stays.
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
        `  after one more append per session (each evicts its oldest to disk only): ${mib(await rssOf(server.pid))}`,
      );
    } finally {
      await lock.release();
    }
  } finally {
    await server.stop();
  }
}
