// Answer amplification (issue 18): 20 sessions of about 1 MiB of metadata, read through ten
// aliases of the session list by a few clients at once. Peak RSS of the server and the p99 of
// an honest `{ __typename }` under that load, against the same server idle.
import http from 'node:http';
import { mib, post, sampleRss, startServer } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const SESSIONS = 20;
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 4);
const METADATA = { blob: 'x'.repeat(1_000_000) };
const AMPLIFIED = {
  query: `{ ${Array.from({ length: 10 }, (_, i) => `a${i}: sessions(first: 1000) { edges { node { metadata } } }`).join(' ')} }`,
};
const HONEST = { query: '{ __typename }' };
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const UPDATE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { revision } }`;

/** One POST whose answer is counted, not parsed: the client must not be what runs out. */
function postCounting(url, payload) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      new URL('/graphql', url),
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (response) => {
        let bytes = 0;
        response.on('data', (chunk) => (bytes += chunk.length));
        response.on('end', () => resolve({ status: response.statusCode, bytes }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** Honest requests back to back for SECONDS; a failed one (the server gone) counts, and stops its client. */
async function honestLoad(url) {
  const latencies = [];
  let failed = 0;
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      while (performance.now() < deadline) {
        const begin = performance.now();
        const answer = await post(url, HONEST).catch(() => undefined);
        latencies.push(performance.now() - begin);
        if (!answer || answer.errors) {
          failed += 1;
          if (!answer) return;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.min(latencies.length - 1, Math.floor(0.99 * latencies.length))];
  return { requests: latencies.length, failed, p99 };
}

export async function amplification() {
  const server = await startServer({});
  try {
    for (let i = 0; i < SESSIONS; i++) {
      const id = `meta-${i}`;
      await post(server.url, {
        query: APPEND,
        variables: { input: { sessionId: id, role: 'USER', content: 'x' } },
      });
      const updated = await post(server.url, {
        query: UPDATE,
        variables: { input: { id, metadata: METADATA } },
      });
      if (updated.errors) throw new Error(JSON.stringify(updated.errors));
    }
    const honest = () => honestLoad(server.url);
    await honest(); // warm-up
    const idleRss = sampleRss(server.pid);
    const idle = await honest();
    const idlePeak = await idleRss.stop();

    const rss = sampleRss(server.pid);
    const payload = Buffer.from(JSON.stringify(AMPLIFIED));
    const statuses = {};
    let answered = 0;
    let stop = false;
    const attackers = Array.from({ length: ATTACKERS }, async () => {
      while (!stop) {
        const { status, bytes } = await postCounting(server.url, payload).catch(() => ({
          status: 'error',
          bytes: 0,
        }));
        statuses[status] = (statuses[status] ?? 0) + 1;
        answered = Math.max(answered, bytes);
      }
    });
    const attacked = await honest();
    stop = true;
    await Promise.all(attackers);
    const attackedPeak = await rss.stop();
    console.log(
      `\nAnswer amplification: ${SESSIONS} sessions of 1 MB metadata; ${ATTACKERS} clients back to back send 10 aliases of sessions(first: 1000) { metadata }; an honest { __typename } (2 clients), ${SECONDS} s each:`,
    );
    console.log(`  idle:     peak RSS ${mib(idlePeak)}, honest p99 ${idle.p99.toFixed(2)} ms`);
    console.log(
      `  attacked: peak RSS ${mib(attackedPeak)}, honest p99 ${attacked.p99.toFixed(2)} ms (${attacked.requests} honest requests, ${attacked.failed} failed); attack answers by status ${JSON.stringify(statuses)}, largest ${mib(answered)}`,
    );
  } finally {
    await server.stop();
  }
}
