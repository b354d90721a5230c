// Under abuse: a normal reader's and a normal appender's p99 while an abusive client sends one
// kind of hostile request after another, against their idle p99 in the same run, on one server.
import { fork } from 'node:child_process';
import { setPriority } from 'node:os';
import { fillSession, load, mib, pinLoad, post, sampleRss, startServer } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = 3;
const READ = {
  query: `{ session(id: "reader") { messageCount messages(first: 50) { edges { node { id content } } } } }`,
};
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;

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
  // The server gets a core of its own, as it would with its attackers on other machines; the
  // clients share the other (with the abusive one at the lowest priority).
  const server = await startServer({ ADMIN_TOKEN: 'bench' }, { cpu: 0 });
  // Given back at the end: the sections after this one pin their own way.
  const unpin = pinLoad(1);
  try {
    for (const sessionId of ['reader', 'big', 'v']) {
      await fillSession(server.url, sessionId, 1000, 500);
    }
    const window = { url: server.url, clients: 2, durationMs: SECONDS * 1000 };
    const reader = () => load({ ...window, makeBody: () => READ });
    const appender = () =>
      load({
        ...window,
        makeBody: (client, i) => ({
          query: APPEND,
          variables: {
            input: { sessionId: `normal-${client}`, role: 'USER', content: `message ${i}` },
          },
        }),
      });
    const normal = () => Promise.all([reader(), appender()]);
    const underLoad = async (body) => {
      const client = fork(new URL('./abuser.js', import.meta.url));
      setPriority(client.pid, 19);
      const sentCount = new Promise((resolve) => client.once('message', resolve));
      // From an address of its own, as an attacker's would be.
      client.send({
        url: server.url,
        body: JSON.stringify(body),
        connections: 2,
        localAddress: '127.0.0.2',
      });
      const [read, append] = await normal();
      client.send('stop');
      const sent = await sentCount;
      await new Promise((resolve) => client.once('exit', resolve));
      return { read, append, sent };
    };
    await normal(); // warm-up
    // p99 over a few seconds rests on a handful of samples, and this machine drifts: each
    // round measures idle and then every load, and each figure is the median over rounds of
    // its ratio to that round's idle p99.
    const loads = { 'a well-behaved client (control)': () => READ, ...ATTACKS };
    const rows = Object.fromEntries(Object.keys(loads).map((name) => [name, []]));
    const idle = [];
    for (let round = 0; round < ROUNDS; round++) {
      const [read, append] = await normal();
      idle.push({ read: read.p99, append: append.p99 });
      for (const [name, body] of Object.entries(loads)) {
        const result = await underLoad(body());
        rows[name].push({
          read: result.read.p99 / read.p99,
          append: result.append.p99 / append.p99,
          sent: result.sent,
        });
      }
    }
    console.log(
      `\nUnder abuse: a normal reader and appender (2 clients each) while one more client (2 connections, back to back) sends one kind of request; server on CPU 0, clients on CPU 1; p99 against idle p99, median of ${ROUNDS} rounds of ${SECONDS} s:`,
    );
    console.log(
      `  idle p99: read ${median(idle.map((r) => r.read)).toFixed(2)} ms, append ${median(idle.map((r) => r.append)).toFixed(2)} ms`,
    );
    const ratios = [];
    for (const [name, results] of Object.entries(rows)) {
      const read = median(results.map((r) => r.read));
      const append = median(results.map((r) => r.append));
      if (name in ATTACKS) ratios.push(read, append);
      console.log(
        `  ${name.padEnd(40)} read p99 ${read.toFixed(2)}x   append p99 ${append.toFixed(2)}x   ${median(results.map((r) => r.sent))} requests sent`,
      );
    }
    console.log(
      `  attacks: worst ratio ${Math.max(...ratios).toFixed(2)}, median ${median(ratios).toFixed(2)} (goal <= 2 each; the control row is what any client sending back to back costs)`,
    );
  } finally {
    unpin();
    await server.stop();
  }
}

const LARGE_SESSIONS = 30;
const LARGE_MESSAGES = 2000;
const WIDE_READ = (sessions) =>
  `{ ${sessions.map((id, i) => `a${i}: session(id: "${id}") { messages(first: 1) { totalCount } }`).join(' ')} }`;

/**
 * The heap after reads of 30 large sessions at once (three requests of ten, the most
 * MAX_FULL_READS_PER_REQUEST lets one request read), then idle: against the baseline, with the
 * session cache at its default bound and with it off. What stays is what the cache keeps.
 */
export async function heapAfterLargeReads() {
  console.log(
    `\nHeap after reading ${LARGE_SESSIONS} sessions of ${LARGE_MESSAGES} messages (3 concurrent requests of 10 transcripts), then idle; live heap after full GC:`,
  );
  for (const [label, env] of [
    ['cache at its default bound (SESSION_CACHE_MAX_BYTES 64 MiB)', {}],
    ['cache off (SESSION_CACHE_SIZE=0)', { SESSION_CACHE_SIZE: '0' }],
  ]) {
    const server = await startServer(env, { heapProbe: true });
    try {
      const ids = Array.from({ length: LARGE_SESSIONS }, (_, i) => `large-${i}`);
      for (const sessionId of ids) await fillSession(server.url, sessionId, LARGE_MESSAGES, 500);
      const baseline = await server.liveHeap();
      const rss = sampleRss(server.pid);
      const round = () =>
        Promise.all(
          [0, 10, 20].map((first) =>
            post(server.url, { query: WIDE_READ(ids.slice(first, first + 10)) }).then((answer) => {
              if (answer.errors) throw new Error(JSON.stringify(answer.errors));
            }),
          ),
        );
      await round();
      const afterFirst = await server.liveHeap();
      await round();
      const afterSecond = await server.liveHeap();
      const peakRss = await rss.stop();
      const grown = (bytes) => `${mib(bytes)} (${((bytes / baseline - 1) * 100).toFixed(0)}%)`;
      console.log(
        `  ${label.padEnd(60)} baseline ${mib(baseline)}, after ${grown(afterFirst)}, after a second round ${grown(afterSecond)}, peak RSS ${mib(peakRss)}`,
      );
    } finally {
      await server.stop();
    }
  }
}
