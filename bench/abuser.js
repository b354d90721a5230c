// The abusive client of `bench/abuse.js`, in a process of its own at the lowest priority:
// building and sending hostile bodies must not take CPU from the clients that time the
// server, or the bench would measure itself. Each body is serialized once, as a real attacker
// would. Started with fork(); sends back how many requests it made once told to stop.
import { postBytes } from './lib.js';

process.once('message', async ({ url, body, connections, localAddress, headers }) => {
  const payload = Buffer.from(body);
  let stop = false;
  let sent = 0;
  process.once('message', () => (stop = true));
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (!stop) {
        // A server that turns the client away may close the connection before the body is
        // sent (EPIPE, ECONNRESET): an attacker just sends the next one.
        await postBytes(url, payload, '/graphql', localAddress, headers).catch(() => undefined);
        sent += 1;
      }
    }),
  );
  process.send(sent, () => process.exit(0));
});
