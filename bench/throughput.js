// Batch throughput and memory: `appendMessages` of 100 messages from 8 clients against the
// driver alone inserting the same rows into the same schema (the limit Scribe's writes are
// bound by), on SQLite and on PostgreSQL, in alternating rounds; and the transient heap one
// batch of 1,000 messages costs the server, against the size of its request.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatRecords } from './raw-inserts.js';
import { onFreshPostgres, openRawPostgres } from './raw-postgres.js';
import { openRawSqlite } from './raw-sqlite.js';
import { load, median, post, startServer } from './lib.js';

const ROUND_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;
const ROUNDS = 3;
const CLIENTS = 8;
const BATCH = 100;
// What the driver is given: multi-row statements in large transactions.
const RAW = { rowsPerStatement: 200, rowsPerTransaction: 10_000 };
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;

const batchBody = (prefix, size) => (client, i) => ({
  query: APPEND_MANY,
  variables: {
    input: {
      sessionId: `${prefix}${client}`,
      messages: Array.from({ length: size }, (_, k) => ({
        role: 'USER',
        content: `message ${i * size + k} of client ${client}`,
      })),
    },
  },
});

const persisted = (answer) => answer.data?.appendMessages?.status === 'PERSISTED';

/**
 * Alternating rounds on one server: Scribe for ROUND_MS, then the driver inserting as many
 * rows as Scribe stored in it, one transaction's rows after another (each made before it is
 * timed). As many, not for as long: the random ids make every insert slower as a table grows,
 * so both tables must grow alike from round to round.
 */
async function batchRounds(label, url, raw, { rawPrefix, where }) {
  const scribe = async (durationMs) => {
    const answers = await load({
      url,
      clients: CLIENTS,
      durationMs,
      makeBody: batchBody('batch-', BATCH),
      check: persisted,
    });
    return { answers, stored: (answers.requests - answers.errors) * BATCH };
  };
  const source = await chatRecords({ clients: CLIENTS, batch: BATCH, prefix: rawPrefix });
  const driver = async (rows) => {
    let seconds = 0;
    for (let inserted = 0; inserted < rows; inserted += RAW.rowsPerTransaction) {
      const records = source.take(Math.min(RAW.rowsPerTransaction, rows - inserted));
      seconds += records.length / (await raw.insertRate(records, RAW));
    }
    return rows / seconds;
  };
  await driver((await scribe(1000)).stored);
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { answers, stored } = await scribe(ROUND_MS);
    const rate = await driver(stored);
    rounds.push({ answers, messagesPerSecond: answers.perSecond * BATCH, rows: stored, rate });
  }
  console.log(
    `\nBatch appends, ${label}: appendMessages of ${BATCH} messages from ${CLIENTS} clients (a session each), against the driver alone (${RAW.rowsPerStatement} rows a statement, ${RAW.rowsPerTransaction.toLocaleString('en')} a transaction, ${where}); ${ROUNDS} alternating rounds of ${ROUND_MS / 1000} s:`,
  );
  for (const [index, { answers, messagesPerSecond, rows, rate }] of rounds.entries()) {
    console.log(
      `  round ${index + 1}  Scribe ${messagesPerSecond.toFixed(0).padStart(7)} messages/s (p50 ${answers.p50.toFixed(1)} ms, p99 ${answers.p99.toFixed(1)} ms, ${answers.requests} requests, ${answers.errors} not PERSISTED)   driver ${rate.toFixed(0).padStart(7)} rows/s (${rows} rows, as many as Scribe stored)`,
    );
  }
  const ratios = rounds.map((round) => round.messagesPerSecond / round.rate);
  console.log(
    `  Scribe / driver per round: ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (goal >= 0.85)`,
  );
  const errors = rounds.reduce((sum, round) => sum + round.answers.errors, 0);
  return [
    { name: `batch, ${label}: Scribe / driver`, value: median(ratios), atLeast: 0.85 },
    { name: `batch, ${label}: answers not PERSISTED`, value: errors, atMost: 0 },
  ];
}

/** Scribe on SQLite against sqlite3 inserting into a copy of the file the server migrated. */
export async function batchSqlite() {
  const dataDir = await mkdtemp(join(tmpdir(), 'scribe-bench-batch-'));
  try {
    // A first start creates and migrates the database; the driver gets a copy of it, closed.
    await (await startServer({ DATA_DIR: dataDir })).stop({ keepData: true });
    const raw = await openRawSqlite(join(dataDir, 'scribe.sqlite'));
    let server;
    try {
      server = await startServer({ DATA_DIR: dataDir });
      // The copy is a file of its own: the same session ids do not meet Scribe's.
      return await batchRounds('SQLite', server.url, raw, {
        rawPrefix: 'batch-',
        where: 'into a copy of the file the server migrated, same pragmas',
      });
    } finally {
      await raw.close();
      await server?.stop({ keepData: true });
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * Scribe on PostgreSQL against pg inserting into the same database, which Scribe migrated at
 * its start, under other session ids: one schema, one table and its indexes, grown by both,
 * and no second server start or database to keep alike.
 */
export function batchPostgres() {
  return onFreshPostgres(
    'Batch appends',
    async (url) => {
      const server = await startServer({ DATABASE_URL: url });
      let raw;
      try {
        raw = await openRawPostgres(url);
        return await batchRounds('PostgreSQL', server.url, raw, {
          rawPrefix: 'raw-',
          where: 'into the same database, sessions of its own',
        });
      } finally {
        await raw?.close();
        await server.stop();
      }
    },
    [],
  );
}

/**
 * Transient heap of one `appendMessages` of 1,000 typical chat lines to a fresh session,
 * measured in the server: heap in use after the request less heap in use after a full
 * collection just before it; beside it, the same for `{ __typename }`, what any request costs.
 * The young generation is sized so that no collection runs during one request (one would free
 * part of what it allocated); a request the probe saw one during is measured again.
 */
export async function batchMemory({ messages = 1000, warmUps = 3, samples = 5 } = {}) {
  const semiSpaceMb = 128;
  const server = await startServer(
    {},
    {
      heapProbe: true,
      nodeArgs: [`--min-semi-space-size=${semiSpaceMb}`, `--max-semi-space-size=${semiSpaceMb}`],
    },
  );
  let sent = 0;
  let collected = 0;
  const allocatedBy = async (makeBody, check) => {
    for (let attempt = 0; attempt < 3; attempt++) {
      await server.markHeap();
      const answer = await post(server.url, makeBody(sent++));
      const allocated = await server.heapAllocated();
      if (!check(answer)) throw new Error(`unexpected answer: ${JSON.stringify(answer)}`);
      if (allocated.collections === 0) return allocated.heapBytes;
      collected += 1;
    }
    return NaN;
  };
  try {
    const batch = (n) => batchBody(`memory-${n}-`, messages)(0, 0);
    const typename = () => ({ query: '{ __typename }' });
    const bodyBytes = Buffer.byteLength(JSON.stringify(batch(0)));
    const batches = [];
    const typenames = [];
    for (let n = 0; n < warmUps + samples; n++) {
      const heap = await allocatedBy(batch, persisted);
      const floor = await allocatedBy(typename, (answer) => answer.data?.__typename === 'Query');
      if (n < warmUps) continue;
      batches.push(heap);
      typenames.push(floor);
    }
    const heap = median(batches.filter(Number.isFinite));
    const floor = median(typenames.filter(Number.isFinite));
    const perMessage = (heap - floor) / messages;
    const kib = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;
    console.log(
      `\nMemory: one appendMessages of ${messages} messages to a fresh session, transient heap in the server (young generation ${semiSpaceMb} MiB a semi-space), median of ${samples} after ${warmUps} warm-ups:`,
    );
    console.log(
      `  heap allocated ${kib(heap)} (per request: ${batches.map(kib).join(', ')}); a { __typename } allocates ${kib(floor)}; ${perMessage.toFixed(0)} bytes a message net of it (goal <= 1024)`,
    );
    console.log(
      `  request body ${kib(bodyBytes)} (${bodyBytes} bytes); heap / body ${(heap / bodyBytes).toFixed(1)} (goal <= 3)`,
    );
    console.log(
      collected === 0
        ? '  no collection ran during a measured request'
        : `  ${collected} request(s) saw a collection and were measured again`,
    );
    return [
      { name: 'memory: one batch of 1,000, heap / body', value: heap / bodyBytes, atMost: 3 },
      {
        name: 'memory: one batch of 1,000, heap bytes a message net of floor',
        value: perMessage,
        atMost: 1024,
      },
    ];
  } finally {
    await server.stop();
  }
}
