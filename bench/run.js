// `npm run bench`: measurements side by side in one run against one started server.
// Absolute numbers on shared machines are noisy; the ratios are what to compare.
import { fmt, load, startServer } from './lib.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const DURATION_MS = Number(process.env.BENCH_SECONDS ?? 5) * 1000;

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id } } }`;

async function healthyAppendVersusTypename() {
  const server = await startServer();
  try {
    const typenameBody = { query: '{ __typename }' };
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
    // Warm both paths (JIT, prepared statements, the SQLite file) before measuring.
    await load({
      url: server.url,
      clients: CLIENTS,
      durationMs: 1000,
      makeBody: () => typenameBody,
    });
    await load({ url: server.url, clients: CLIENTS, durationMs: 1000, makeBody: appendBody });
    const typename = await load({
      url: server.url,
      clients: CLIENTS,
      durationMs: DURATION_MS,
      makeBody: () => typenameBody,
    });
    const append = await load({
      url: server.url,
      clients: CLIENTS,
      durationMs: DURATION_MS,
      makeBody: appendBody,
      check: (answer) => answer.data?.appendMessage?.status === 'PERSISTED',
    });
    console.log(
      `\nHealthy path, SQLite, ${CLIENTS} concurrent clients, ${DURATION_MS / 1000} s each:`,
    );
    console.log(`  { __typename }      ${fmt(typename)}`);
    console.log(`  appendMessage       ${fmt(append)}`);
    console.log(
      `  append / __typename throughput ratio: ${(append.perSecond / typename.perSecond).toFixed(2)}`,
    );
  } finally {
    await server.stop();
  }
}

await healthyAppendVersusTypename();
