// `npm run bench`: measurements side by side in one run, each against one started server.
// Absolute numbers on shared machines are noisy; compare the ratios measured in the same run.
import {
  durableLayerCost,
  healthyAppendRate,
  memoryAtCap,
  outageThroughput,
  replayRate,
} from './durability.js';
import { heapAfterLargeReads, underAbuse } from './abuse.js';
import { cheapReadsUnderLoad, coldFanOutInProcess, coldFanOutOverHttp } from './gate.js';
import { fmt, load, startServer } from './lib.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id } } }`;
const TYPENAME = { query: '{ __typename }' };

const appendBody = (client, i) => ({
  query: APPEND,
  variables: {
    input: {
      sessionId: `bench-${client}`,
      role: 'USER',
      content: `message ${i} of client ${client}`,
    },
  },
});

const ROUNDS = 3;

/**
 * Append throughput against `{ __typename }` on the same server at CLIENTS concurrent clients,
 * in alternating rounds so that the machine's drift hits both alike; the median ratio is the
 * figure to compare.
 */
async function healthyPath(label, env) {
  const server = await startServer(env);
  try {
    // Warm both paths (JIT, the database file) before measuring.
    await load({ url: server.url, clients: CLIENTS, durationMs: 1000, makeBody: () => TYPENAME });
    await load({ url: server.url, clients: CLIENTS, durationMs: 1000, makeBody: appendBody });
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      const typename = await load({
        url: server.url,
        clients: CLIENTS,
        durationMs: DURATION_MS / ROUNDS,
        makeBody: () => TYPENAME,
      });
      const append = await load({
        url: server.url,
        clients: CLIENTS,
        durationMs: DURATION_MS / ROUNDS,
        makeBody: appendBody,
        check: (answer) => answer.data?.appendMessage?.status === 'PERSISTED',
      });
      rounds.push({ typename, append, ratio: append.perSecond / typename.perSecond });
    }
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(ROUNDS / 2)];
    console.log(`\n${label}, ${CLIENTS} concurrent clients, ${ROUNDS} alternating rounds:`);
    for (const [index, round] of rounds.entries()) {
      console.log(`  round ${index + 1}  { __typename } ${fmt(round.typename)}`);
      console.log(`           appendMessage  ${fmt(round.append)}`);
    }
    console.log(
      `  append / __typename per round: ${rounds.map((round) => round.ratio.toFixed(2)).join(', ')}; median ${median.ratio.toFixed(2)}`,
    );
  } finally {
    await server.stop();
  }
}

const sections = {
  healthy: async () => {
    await healthyPath('SQLite, SQLITE_SYNCHRONOUS=FULL (default)', {});
    await healthyPath('SQLite, SQLITE_SYNCHRONOUS=NORMAL', { SQLITE_SYNCHRONOUS: 'NORMAL' });
    if (process.env.BENCH_DATABASE_URL) {
      await healthyPath('PostgreSQL', { DATABASE_URL: process.env.BENCH_DATABASE_URL });
    }
  },
  durability: async () => {
    await outageThroughput();
    await replayRate();
    await durableLayerCost(await healthyAppendRate());
    await memoryAtCap();
  },
  abuse: async () => {
    await underAbuse();
    await heapAfterLargeReads();
  },
  gate: async () => {
    await coldFanOutInProcess();
    await coldFanOutOverHttp();
    await cheapReadsUnderLoad();
  },
};

// `npm run bench -- gate` runs one section; no argument runs them all.
const chosen = process.argv.slice(2);
for (const [name, run] of Object.entries(sections)) {
  if (chosen.length === 0 || chosen.includes(name)) await run();
}
// The in-process sections leave handles (a Nest context's timers) behind; the figures are out.
process.exit(0);
