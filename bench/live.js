// Live delivery: 100 graphql-ws subscribers of one session while 8 clients append to it.
// Goal: every subscriber gets each message within 100 ms (p99) of its commit.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { median, post, startServer } from './lib.js';
import { onFreshPostgres } from './raw-postgres.js';

const SUBSCRIBERS = 100;
const APPENDERS = 8;
const DURATION_MS = 10_000;
const APPEND = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id createdAt } }
}`;
const LIVE = `subscription($s: ID!) { messageAppended(sessionId: $s) { node { id createdAt } } }`;

const at = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** Appends back to back from `clients` clients for `ms`; the answer time of each message id. */
async function appendFor(url, sessionId, clients, ms) {
  const answered = new Map();
  const deadline = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const answer = await post(url, {
          query: APPEND,
          variables: {
            input: { sessionId, role: 'USER', content: `c${client}-${i} ${'x'.repeat(200)}` },
          },
        });
        const message = answer.data?.appendMessage?.message;
        if (message)
          answered.set(message.id, { at: Date.now(), createdAt: Date.parse(message.createdAt) });
      }
    }),
  );
  return answered;
}

async function deliveryRun(label, env) {
  const server = await startServer(env);
  const wsUrl = `${server.url.replace(/^http/, 'ws')}/graphql`;
  try {
    // Without subscribers, for the ratio.
    const alone = await appendFor(server.url, 'alone', APPENDERS, DURATION_MS / 2);

    const received = Array.from({ length: SUBSCRIBERS }, () => new Map());
    const clients = [];
    for (let index = 0; index < SUBSCRIBERS; index++) {
      const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
      clients.push(client);
      client.subscribe(
        { query: LIVE, variables: { s: 'live' } },
        {
          next: ({ data }) => received[index].set(data.messageAppended.node.id, Date.now()),
          error: (error) => console.error(`subscriber ${index}: ${JSON.stringify(error)}`),
          complete: () => undefined,
        },
      );
    }
    // Every subscriber is live once each has received a seed.
    for (let seeds = 0; received.some((map) => map.size === 0); seeds++) {
      if (seeds > 400) throw new Error('subscribers did not all go live');
      await post(server.url, {
        query: APPEND,
        variables: { input: { sessionId: 'live', role: 'USER', content: `seed ${seeds}` } },
      });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    for (const map of received) map.clear();

    const started = performance.now();
    const answered = await appendFor(server.url, 'live', APPENDERS, DURATION_MS);
    const appendSeconds = (performance.now() - started) / 1000;
    // Let the last deliveries land (bounded).
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && received.some((map) => map.size < answered.size)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const fromAcceptance = [];
    const fromAnswer = [];
    let delivered = 0;
    let missing = 0;
    for (const map of received) {
      for (const [id, times] of answered) {
        const got = map.get(id);
        if (got === undefined) {
          missing += 1;
          continue;
        }
        delivered += 1;
        fromAcceptance.push(got - times.createdAt);
        fromAnswer.push(got - times.at);
      }
    }
    fromAcceptance.sort((a, b) => a - b);
    fromAnswer.sort((a, b) => a - b);
    const aloneRate = alone.size / (DURATION_MS / 2000);
    const liveRate = answered.size / appendSeconds;
    console.log(`\n${label}: ${SUBSCRIBERS} subscribers of one session, ${APPENDERS} appenders`);
    console.log(
      `  appends/s alone ${aloneRate.toFixed(0)}, with subscribers ${liveRate.toFixed(0)} (ratio ${(liveRate / aloneRate).toFixed(2)})`,
    );
    console.log(
      `  delivered ${delivered} (${(delivered / appendSeconds).toFixed(0)} messages/s to subscribers), missing ${missing}`,
    );
    console.log(
      `  acceptance -> delivery  p50 ${at(fromAcceptance, 0.5)} ms  p99 ${at(fromAcceptance, 0.99)} ms  max ${fromAcceptance.at(-1)} ms   (an upper bound of commit -> delivery; goal p99 <= 100 ms: ${at(fromAcceptance, 0.99) <= 100 ? 'met' : 'NOT MET'})`,
    );
    console.log(
      `  answer -> delivery      p50 ${at(fromAnswer, 0.5)} ms  p99 ${at(fromAnswer, 0.99)} ms  (negative: delivered before the appender had its answer)`,
    );
    for (const client of clients) await client.dispose();
    return { p99: at(fromAcceptance, 0.99), median: median(fromAcceptance) };
  } finally {
    await server.stop();
  }
}

export async function liveDelivery() {
  await deliveryRun('SQLite', {});
  // Through LISTEN/NOTIFY: the write NOTIFYs, the listener reads the messages back by id.
  await onFreshPostgres('Live delivery', (url) => deliveryRun('PostgreSQL', { DATABASE_URL: url }));
}
