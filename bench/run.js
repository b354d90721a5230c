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
import { amplification } from './amplification.js';
import { cheapReadsUnderLoad, coldFanOutInProcess, coldFanOutOverHttp } from './gate.js';
import { liveDelivery } from './live.js';
import { againstPostGraphile } from './peer.js';
import { preAuthBurst } from './preauth.js';
import { singleAppend } from './single-append.js';
import { batchMemory, batchPostgres, batchSqlite } from './throughput.js';
import { transferRoundTrip } from './transfer.js';

/** Prints each figure (a median over its rounds) against its goal. */
function printFigures(title, figures) {
  console.log(`\n${title}, each figure (a median over its rounds) against its goal:`);
  for (const { name, value, atLeast, atMost } of figures) {
    const met = atLeast !== undefined ? value >= atLeast : value <= atMost;
    const goal = atLeast !== undefined ? `>= ${atLeast}` : `<= ${atMost}`;
    console.log(
      `  ${name.padEnd(56)} ${value.toFixed(Number.isInteger(value) ? 0 : 2).padStart(7)}   goal ${goal.padEnd(8)} ${met ? 'met' : 'NOT MET'}`,
    );
  }
}

const sections = {
  healthy: async () => {
    await singleAppend('SQLite, SQLITE_SYNCHRONOUS=FULL (default)', {});
    await singleAppend('SQLite, SQLITE_SYNCHRONOUS=NORMAL', { SQLITE_SYNCHRONOUS: 'NORMAL' });
    if (process.env.BENCH_DATABASE_URL) {
      await singleAppend('PostgreSQL', { DATABASE_URL: process.env.BENCH_DATABASE_URL });
    }
  },
  throughput: async () => {
    const figures = [
      ...(await batchSqlite()),
      ...(await batchPostgres()),
      ...(await singleAppend('SQLite, SQLITE_SYNCHRONOUS=FULL (default)', {}, { bare: true })),
      ...(await batchMemory()),
    ];
    printFigures('Throughput', figures);
  },
  durability: async () => {
    const outage = await outageThroughput();
    const replay = await replayRate();
    await durableLayerCost(await healthyAppendRate());
    await memoryAtCap();
    printFigures('Durability', [
      { name: 'outage (SQLite locked) / healthy, throughput', value: outage.ratio, atLeast: 0.5 },
      { name: 'boot replay / the driver alone, rows/s', value: replay.ratio, atLeast: 0.9 },
    ]);
  },
  abuse: async () => {
    await underAbuse();
    await preAuthBurst();
    await heapAfterLargeReads();
    await amplification();
  },
  // The amplification figure alone (part of `abuse`).
  amplification: async () => {
    await amplification();
  },
  live: async () => {
    printFigures('Live delivery', await liveDelivery());
  },
  transfer: async () => {
    // SQLite only: the two instances need databases of their own (one PostgreSQL URL is one).
    await transferRoundTrip('SQLite');
  },
  peer: async () => {
    printFigures('Against PostGraphile', await againstPostGraphile());
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
