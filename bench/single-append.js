// Single appends: `appendMessage` against `{ __typename }` on the same server (what storing a
// message costs over the cheapest request there is), and Scribe's `{ __typename }` against a
// bare NestJS + Apollo app's (what Scribe's HTTP and GraphQL layers cost over the framework's).
// Alternating rounds in one run, the servers pinned alike, so that drift hits every figure.
import { fmt, load, median, startServer, withPinnedLoad } from './lib.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;
const ROUNDS = 3;

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

const perRound = (values) =>
  `${values.map((value) => value.toFixed(2)).join(', ')}; median ${median(values).toFixed(2)}`;

/**
 * Append throughput and p99 against `{ __typename }` on the same Scribe server at CLIENTS
 * concurrent clients; with `bare`, also `{ __typename }` on bench/bare-app.js, started beside
 * it and pinned the same way. The median of each ratio over the rounds is the figure.
 */
export async function singleAppend(label, env, { bare = false } = {}) {
  return withPinnedLoad(async ({ serverCpu }) => {
    const server = await startServer(env, { cpu: serverCpu });
    let bareApp;
    try {
      if (bare) bareApp = await startServer({}, { cpu: serverCpu, script: 'bench/bare-app.js' });
      const measure = (url, makeBody, durationMs, check) =>
        load({ url, clients: CLIENTS, durationMs, makeBody, check });
      const typename = (url, durationMs) => measure(url, () => TYPENAME, durationMs);
      const append = (durationMs) =>
        measure(
          server.url,
          appendBody,
          durationMs,
          (answer) => answer.data?.appendMessage?.status === 'PERSISTED',
        );
      // Warm every path (JIT, the database file) before measuring.
      await typename(server.url, 1000);
      await append(1000);
      if (bareApp) await typename(bareApp.url, 1000);
      const rounds = [];
      for (let round = 0; round < ROUNDS; round++) {
        rounds.push({
          typename: await typename(server.url, DURATION_MS / ROUNDS),
          append: await append(DURATION_MS / ROUNDS),
          bare: bareApp && (await typename(bareApp.url, DURATION_MS / ROUNDS)),
        });
      }
      const pinned =
        serverCpu === undefined ? 'unpinned' : `servers on CPU ${serverCpu}, clients on another`;
      console.log(
        `\nSingle appends, ${label}, ${CLIENTS} concurrent clients, ${ROUNDS} alternating rounds of ${(DURATION_MS / ROUNDS / 1000).toFixed(1)} s (${pinned}):`,
      );
      for (const [index, round] of rounds.entries()) {
        console.log(`  round ${index + 1}  Scribe { __typename }   ${fmt(round.typename)}`);
        console.log(`           appendMessage           ${fmt(round.append)}`);
        if (round.bare) console.log(`           bare app { __typename } ${fmt(round.bare)}`);
      }
      const throughput = rounds.map((round) => round.append.perSecond / round.typename.perSecond);
      const p99 = rounds.map((round) => round.append.p99 / round.typename.p99);
      console.log(
        `  append / __typename throughput per round: ${perRound(throughput)} (goal >= 0.8)`,
      );
      console.log(`  append / __typename p99 per round:        ${perRound(p99)} (goal <= 2)`);
      const figures = [
        { name: 'single append / __typename, throughput', value: median(throughput), atLeast: 0.8 },
        { name: 'single append / __typename, p99', value: median(p99), atMost: 2 },
      ];
      if (bareApp) {
        const framework = rounds.map((round) => round.typename.perSecond / round.bare.perSecond);
        console.log(
          `  Scribe / bare app { __typename } throughput per round: ${perRound(framework)} (goal >= 0.9)`,
        );
        figures.push({
          name: '__typename, Scribe / bare NestJS + Apollo',
          value: median(framework),
          atLeast: 0.9,
        });
      }
      return figures;
    } finally {
      await bareApp?.stop();
      await server.stop();
    }
  });
}
