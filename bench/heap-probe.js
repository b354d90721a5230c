// Loaded into a bench server with `--expose-gc --import ./bench/heap-probe.js`, never in
// production: asked over the IPC channel, it collects garbage twice and answers with the heap
// in use, so that the bench reads the server's live heap rather than whatever garbage happens
// to be waiting. (A signal will not do: Nest's shutdown hooks take SIGUSR2 as one to stop on.)
process.on('message', (message) => {
  if (message !== 'heap') return;
  globalThis.gc();
  globalThis.gc();
  process.send({ heapUsed: process.memoryUsage().heapUsed });
});
process.channel?.unref();
