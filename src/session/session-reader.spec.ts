import { ScribeConfig } from '../config/scribe-config.js';
import { type SessionQueries } from '../database/session-queries.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type FullSession } from '../message/session-record.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SessionReader } from './session-reader.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Full loads the test releases one by one. */
function harness() {
  const running: { id: string; done: Deferred<FullSession | null> }[] = [];
  const queries = {
    loadFull: (id: string) => {
      const done = deferred<FullSession | null>();
      running.push({ id, done });
      return done.promise;
    },
    findMetadata: () => Promise.resolve(null),
  } as unknown as SessionQueries;
  const config = ScribeConfig.fromVariables({
    SESSION_RESOLVE_CONCURRENCY: '2',
    SESSION_CACHE_SIZE: '0',
  });
  const reader = new SessionReader(queries, config, new MetricsService());
  const release = (id: string) => {
    const index = running.findIndex((load) => load.id === id);
    running.splice(index, 1)[0].done.resolve(null);
  };
  return { reader, running, release };
}

describe(SessionReader.name, () => {
  it("runs one request's full reads one at a time, beside another request's", async () => {
    const { reader, running, release } = harness();
    const greedy = {};
    const modest = {};
    const greedyReads = ['a', 'b', 'c'].map((id) => reader.full(id, undefined, greedy));
    const modestRead = reader.full('z', undefined, modest);
    await tick();
    // Two slots: the greedy request holds one, the other request gets the second at once.
    expect(running.map((load) => load.id)).toEqual(['a', 'z']);
    release('a');
    await tick();
    expect(running.map((load) => load.id)).toEqual(['z', 'b']);
    release('z');
    release('b');
    await tick();
    expect(running.map((load) => load.id)).toEqual(['c']);
    release('c');
    await Promise.all([...greedyReads, modestRead]);
  });

  it('lets reads without a requester use the slots as they come', async () => {
    const { reader, running, release } = harness();
    const reads = ['a', 'b'].map((id) => reader.full(id));
    await tick();
    expect(running.map((load) => load.id)).toEqual(['a', 'b']);
    release('a');
    release('b');
    await Promise.all(reads);
  });
});
