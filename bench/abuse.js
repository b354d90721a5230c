// Under abuse: a normal reader's and a normal appender's p99 while an abusive client sends one
// kind of hostile request after another, against their idle p99 in the same run, on one server.
import { load, post, startServer } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const READ = {
  query: `{ session(id: "reader") { messageCount messages(first: 50) { edges { node { id content } } } } }`,
};
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;

const aliases = (count, session) =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: session(id: "${session}") { messages(first: 1) { totalCount } }`).join(' ')} }`;

function nestedFragments(count) {
  let text = 'query { ...F0 }\n';
  for (let i = 0; i < count; i++) text += `fragment F${i} on Query { ...F${i + 1} }\n`;
  return `${text}fragment F${count} on Query { __typename }\n`;
}

const ATTACKS = {
  '1,000 aliased full reads': () => ({ query: aliases(1000, 'v') }),
  '10 full reads of 1,000-message sessions': () => ({ query: aliases(10, 'big') }),
  '1,200 nested fragments': () => ({ query: nestedFragments(1200) }),
  '1 MB query document': () => ({ query: `{ __typename ${' '.repeat(1024 * 1024)}}` }),
  'metadata with 60,000 keys': () => ({
    query: APPEND,
    variables: {
      input: {
        sessionId: 'abuse',
        role: 'USER',
        content: 'x',
        metadata: Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, i])),
      },
    },
  }),
  'admin queries without a token': () => ({ query: '{ pendingStatus { totalPending } }' }),
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function underAbuse() {
  const server = await startServer({ ADMIN_TOKEN: 'bench' });
  try {
    const content = 'y'.repeat(500);
    for (const sessionId of ['reader', 'big', 'v']) {
      await post(server.url, {
        query: APPEND_MANY,
        variables: {
          input: {
            sessionId,
            messages: Array.from({ length: 1000 }, (_, i) => ({
              role: 'USER',
              content: `${i} ${content}`,
            })),
          },
        },
      });
    }
    const reader = () =>
      load({ url: server.url, clients: 2, durationMs: (SECONDS * 1000) / 2, makeBody: () => READ });
    const appender = () =>
      load({
        url: server.url,
        clients: 2,
        durationMs: (SECONDS * 1000) / 2,
        makeBody: (client, i) => ({
          query: APPEND,
          variables: {
            input: { sessionId: `normal-${client}`, role: 'USER', content: `message ${i}` },
          },
        }),
      });
    const normal = () => Promise.all([reader(), appender()]);
    await normal(); // warm-up
    const [idleRead, idleAppend] = await normal();
    console.log(
      `\nUnder abuse: a normal reader and appender (2 clients each), idle against one abusive client (2 connections) per attack:`,
    );
    console.log(
      `  idle        read p99 ${idleRead.p99.toFixed(2)} ms   append p99 ${idleAppend.p99.toFixed(2)} ms`,
    );
    const ratios = [];
    for (const [name, attack] of Object.entries(ATTACKS)) {
      let stop = false;
      let sent = 0;
      const abuser = Promise.all(
        Array.from({ length: 2 }, async () => {
          while (!stop) {
            await post(server.url, attack());
            sent += 1;
          }
        }),
      );
      const [read, append] = await normal();
      stop = true;
      await abuser;
      const readRatio = read.p99 / idleRead.p99;
      const appendRatio = append.p99 / idleAppend.p99;
      ratios.push(readRatio, appendRatio);
      console.log(
        `  ${name.padEnd(40)} read p99 ${read.p99.toFixed(2)} ms (${readRatio.toFixed(2)}x)   append p99 ${append.p99.toFixed(2)} ms (${appendRatio.toFixed(2)}x)   ${sent} abusive requests`,
      );
    }
    console.log(
      `  worst ratio ${Math.max(...ratios).toFixed(2)}, median ${median(ratios).toFixed(2)} (goal <= 2 each)`,
    );
  } finally {
    await server.stop();
  }
}
