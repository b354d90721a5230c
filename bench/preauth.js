// The pre-auth burst: many concurrent bodies of MAX_BODY_BYTES with a bad token, from one
// address, while a normal reader and appender are timed; against their idle p99 and the
// server's idle peak RSS, in the same run. Refused credentials must cost neither the body nor
// the event loop: the figure is how much of both the burst takes from everyone else.
import { fork } from 'node:child_process';
import { setPriority } from 'node:os';
import { fillSession, load, median, mib, pinLoad, sampleRss, startServer } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = 3;
const CONNECTIONS = 60;
const BODY_BYTES = 16 * 1024 * 1024 - 1024;
const READ = {
  query: `{ session(id: "reader") { messageCount messages(first: 50) { edges { node { id content } } } } }`,
};
const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`;

export async function preAuthBurst() {
  // ADMIN_TOKEN alone keeps anonymous callers in (the timed clients), and a bad token out.
  const server = await startServer({ ADMIN_TOKEN: 'bench' }, { cpu: 0 });
  // Given back at the end: the sections after this one pin their own way.
  const unpin = pinLoad(1);
  try {
    await fillSession(server.url, 'reader', 1000, 500);
    const window = { url: server.url, clients: 2, durationMs: SECONDS * 1000 };
    const normal = () =>
      Promise.all([
        load({ ...window, makeBody: () => READ }),
        load({
          ...window,
          makeBody: (client, i) => ({
            query: APPEND,
            variables: {
              input: { sessionId: `normal-${client}`, role: 'USER', content: `message ${i}` },
            },
          }),
        }),
      ]);
    const filler = 'x'.repeat(BODY_BYTES - 64);
    const body = JSON.stringify({ query: '{ __typename }', variables: { x: filler } });
    const measured = async (round, burst) => {
      const rss = sampleRss(server.pid);
      let client;
      let sentCount;
      if (burst) {
        client = fork(new URL('./abuser.js', import.meta.url));
        setPriority(client.pid, 19);
        sentCount = new Promise((resolve) => client.once('message', resolve));
        // A fresh address each round: the budget a round spent is not the next one's.
        client.send({
          url: server.url,
          body,
          connections: CONNECTIONS,
          localAddress: `127.0.0.${20 + round}`,
          headers: { authorization: 'Bearer nope' },
        });
      }
      const [read, append] = await normal();
      let sent = 0;
      if (client) {
        client.send('stop');
        sent = await sentCount;
        await new Promise((resolve) => client.once('exit', resolve));
      }
      return { read: read.p99, append: append.p99, rss: await rss.stop(), sent };
    };
    await normal(); // warm-up
    const idle = [];
    const burst = [];
    for (let round = 0; round < ROUNDS; round++) {
      idle.push(await measured(round, false));
      burst.push(await measured(round, true));
    }
    const figure = (rows, key) => median(rows.map((row) => row[key]));
    console.log(
      `\nPre-auth burst: ${CONNECTIONS} connections from one address sending ${mib(BODY_BYTES)} bodies with a bad token, back to back, while a normal reader and appender (2 clients each) are timed; server on CPU 0; p99 median of ${ROUNDS} rounds of ${SECONDS} s:`,
    );
    // The RSS baseline is the first idle round's: memory a burst took is rarely given back.
    console.log(
      `  idle   read p99 ${figure(idle, 'read').toFixed(2)} ms, append p99 ${figure(idle, 'append').toFixed(2)} ms, server peak RSS ${mib(idle[0].rss)} (before any burst)`,
    );
    console.log(
      `  burst  read p99 ${figure(burst, 'read').toFixed(2)} ms, append p99 ${figure(burst, 'append').toFixed(2)} ms, server peak RSS ${mib(Math.max(...burst.map((row) => row.rss)))} (highest round), ${figure(burst, 'sent')} bad requests sent a round`,
    );
    const ratio = (key) =>
      median(burst.map((row, round) => row[key] / idle[round][key])).toFixed(2);
    console.log(`  burst against idle: read p99 ${ratio('read')}x, append p99 ${ratio('append')}x`);
  } finally {
    unpin();
    await server.stop();
  }
}
