// Loaded into a bench server with `--expose-gc --import ./bench/heap-probe.js`, never in
// production. Asked over the IPC channel (a signal will not do: Nest's shutdown hooks take
// SIGUSR2 as one to stop on), it answers:
// - 'heap': collects garbage twice and answers with the heap in use, so that the bench reads
//   the server's live heap rather than whatever garbage happens to be waiting;
// - 'mark': collects garbage twice and remembers the heap in use;
// - 'allocated': the heap in use now less the mark, and how many collections ran in between.
//   A collection would free some of what was allocated and hide it, so the server is started
//   with a young generation larger than one request allocates; this says whether that held.
import { PerformanceObserver } from 'node:perf_hooks';

let gcStarts = [];
let mark = null;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcStarts.push(entry.startTime);
});
observer.observe({ entryTypes: ['gc'] });

process.on('message', (message) => {
  if (message === 'heap') {
    globalThis.gc();
    globalThis.gc();
    process.send({ heapUsed: process.memoryUsage().heapUsed });
  } else if (message === 'mark') {
    globalThis.gc();
    globalThis.gc();
    const { heapUsed, external } = process.memoryUsage();
    mark = { heapUsed, external, at: performance.now() };
    process.send({ marked: true });
  } else if (message === 'allocated') {
    const { heapUsed, external } = process.memoryUsage();
    const at = performance.now();
    const since = mark;
    // gc entries arrive after the collection, asynchronously: wait for them, then count the
    // ones that started between the mark (after its own collections) and now.
    setTimeout(() => {
      const collections = gcStarts.filter((start) => start > since.at && start < at).length;
      gcStarts = gcStarts.filter((start) => start >= at);
      process.send({
        heapBytes: heapUsed - since.heapUsed,
        externalBytes: external - since.external,
        collections,
      });
    }, 50);
  }
});
process.channel?.unref();
