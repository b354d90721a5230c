// The floors under `{ __typename }` on this machine: how fast a request that reads nothing can be
// answered by each layer Scribe stands on, beside PostGraphile and Scribe itself. No goal: they
// say which goals of the peer section a change of platform could reach (issue 24's notes).
// One server alive at a time, pinned as the peer section pins its own; rounds alternate.
import { loadWithCpu, median, startServer } from './lib.js';

const CLIENTS = 32;
const SECONDS = 5;
const WARM_UP_SECONDS = 2;
const ROUNDS = 3;

const servers = {
  PostGraphile: { script: 'bench/peer-server.js', database: true },
  'Apollo Server alone': { script: 'bench/apollo-alone.js' },
  'Nest + Apollo, Fastify': { script: 'bench/bare-app.js', env: { BARE_PLATFORM: 'fastify' } },
  'Nest + Apollo, Express': { script: 'bench/bare-app.js' },
  Scribe: { script: 'dist/main.js', database: true },
};

/** Prints each server's `{ __typename }` rate and CPU a request, and its ratio to PostGraphile. */
export async function typenameFloors(url, serverCpu) {
  const results = Object.fromEntries(Object.keys(servers).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const names = Object.keys(servers);
    if (round % 2) names.reverse();
    for (const name of names) {
      const { script, database, env = {} } = servers[name];
      const server = await startServer(
        { ...env, ...(database ? { DATABASE_URL: url } : {}) },
        {
          cpu: serverCpu,
          script,
        },
      );
      try {
        results[name].push(
          await loadWithCpu(server, {
            clients: CLIENTS,
            warmUpSeconds: WARM_UP_SECONDS,
            seconds: SECONDS,
            makeBody: () => ({ query: '{ __typename }' }),
          }),
        );
      } finally {
        await server.stop();
      }
    }
  }
  const rateOf = (name) => median(results[name].map((result) => result.perSecond));
  console.log(
    `\n{ __typename } floors, ${CLIENTS} clients, ${ROUNDS} alternating rounds of ${SECONDS} s (no goal: what each layer under Scribe costs):`,
  );
  for (const name of Object.keys(servers)) {
    const cpu = median(results[name].map((result) => result.serverCpu));
    const errors = results[name].reduce((sum, result) => sum + result.errors, 0);
    console.log(
      `  ${name.padEnd(24)} ${rateOf(name).toFixed(0).padStart(6)} req/s  ${cpu.toFixed(3)} ms CPU a request  / PostGraphile ${(rateOf(name) / rateOf('PostGraphile')).toFixed(2)}  (${errors} errors)`,
    );
  }
}
