import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { recordBytes, type FullSession, type SessionRecord } from '../message/session-record.js';
import { type SessionLoader } from './session-loader.js';
import {
  SessionResolveGate,
  type SessionResolveGateMetrics,
  type SessionResolveGateOptions,
} from './session-resolve-gate.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';

function sessionRecord(sessionId: string, revision: number): SessionRecord {
  return {
    id: sessionId,
    title: `Session ${sessionId}`,
    metadata: null,
    createdAt: 0,
    updatedAt: revision,
    messageCount: revision,
    revision,
  };
}

function message(sessionId: string, index: number): MessageRecord {
  return {
    id: `${sessionId}-message-${index}`,
    sessionId,
    orderKey: String(index).padStart(8, '0'),
    role: MessageRole.USER,
    content: `message ${index}`,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    acceptedAt: index,
  };
}

/**
 * A database of sessions (every id exists at revision 1 unless told otherwise) whose full loads
 * can be held until the test releases them, counting calls and how many run at once.
 */
class FakeSessionLoader implements SessionLoader {
  readonly revisions = new Map<string, number>();
  readonly missing = new Set<string>();
  /** Sessions whose load stops short: too large for the byte budget. */
  readonly oversized = new Set<string>();
  readonly failures = new Map<string, Error>();
  /** Revisions the next metadata reads report, ahead of what full loads see. */
  readonly upcomingMetadataRevisions: number[] = [];
  readonly fullCalls: string[] = [];
  readonly metadataCalls: string[] = [];
  active = 0;
  peak = 0;
  holdEverything = false;
  /** Runs inside loadFull after any hold, to let a test call back into the gate. */
  duringLoad: ((sessionId: string) => Promise<void>) | null = null;
  private readonly held = new Set<string>();
  private readonly pending: { sessionId: string; release: Deferred<void> }[] = [];
  private readonly startWaiters: { count: number; started: Deferred<void> }[] = [];

  async loadFull(sessionId: string): Promise<FullSession | null> {
    this.fullCalls.push(sessionId);
    this.active += 1;
    this.peak = Math.max(this.peak, this.active);
    // The read sees the database as it was when the load began
    const revision = this.revisionOf(sessionId);
    const missing = this.missing.has(sessionId);
    this.notifyStarted();
    try {
      if (this.holdEverything || this.held.has(sessionId)) {
        const release = deferred<void>();
        this.pending.push({ sessionId, release });
        await release.promise;
      }
      await this.duringLoad?.(sessionId);
      const failure = this.failures.get(sessionId);
      if (failure) {
        this.failures.delete(sessionId);
        throw failure;
      }
      if (missing) return null;
      const session = sessionRecord(sessionId, revision);
      if (this.oversized.has(sessionId)) {
        return { session, messages: [], bytes: Number.MAX_SAFE_INTEGER, complete: false };
      }
      const messages = Array.from({ length: revision }, (_, index) => message(sessionId, index));
      const bytes = messages.reduce((sum, record) => sum + recordBytes(record), 0);
      return { session, messages, bytes, complete: true };
    } finally {
      this.active -= 1;
    }
  }

  loadMetadata(sessionId: string): Promise<SessionRecord | null> {
    this.metadataCalls.push(sessionId);
    if (this.missing.has(sessionId)) return Promise.resolve(null);
    const revision = this.upcomingMetadataRevisions.shift() ?? this.revisionOf(sessionId);
    return Promise.resolve(sessionRecord(sessionId, revision));
  }

  hold(...sessionIds: string[]): void {
    for (const sessionId of sessionIds) this.held.add(sessionId);
  }

  /** Lets held and future loads of these sessions finish. */
  release(...sessionIds: string[]): void {
    for (const sessionId of sessionIds) this.held.delete(sessionId);
    for (const load of [...this.pending]) {
      if (!sessionIds.includes(load.sessionId)) continue;
      this.pending.splice(this.pending.indexOf(load), 1);
      load.release.resolve();
    }
  }

  /** Lets only the earliest held load of this session finish; the session stays held. */
  releaseOldest(sessionId: string): void {
    const load = this.pending.find((candidate) => candidate.sessionId === sessionId);
    if (!load) return;
    this.pending.splice(this.pending.indexOf(load), 1);
    load.release.resolve();
  }

  releaseAll(): void {
    this.holdEverything = false;
    this.release(...this.held, ...this.pending.map((load) => load.sessionId));
  }

  /** Resolves once loadFull has been called `count` times in total. */
  untilStarted(count: number): Promise<void> {
    if (this.fullCalls.length >= count) return Promise.resolve();
    const started = deferred<void>();
    this.startWaiters.push({ count, started });
    return started.promise;
  }

  private revisionOf(sessionId: string): number {
    return this.revisions.get(sessionId) ?? 1;
  }

  private notifyStarted(): void {
    for (const waiter of [...this.startWaiters]) {
      if (waiter.count > this.fullCalls.length) continue;
      this.startWaiters.splice(this.startWaiters.indexOf(waiter), 1);
      waiter.started.resolve();
    }
  }
}

class CountingMetrics implements SessionResolveGateMetrics {
  fullLoads = 0;
  cacheHits = 0;
  cacheMisses = 0;
  staleReloads = 0;

  fullLoad(): void {
    this.fullLoads += 1;
  }

  cacheHit(): void {
    this.cacheHits += 1;
  }

  cacheMiss(): void {
    this.cacheMisses += 1;
  }

  staleReload(): void {
    this.staleReloads += 1;
  }
}

// Long enough never to fire by accident; the timeout tests set their own
const defaultOptions: SessionResolveGateOptions = {
  concurrency: 4,
  timeoutMs: 60_000,
  cacheSize: 10,
  cacheMaxBytes: 64 * 1024 * 1024,
};

function createGate(
  options: Partial<SessionResolveGateOptions> = {},
  metrics?: SessionResolveGateMetrics,
): { sut: SessionResolveGate; loader: FakeSessionLoader } {
  const loader = new FakeSessionLoader();
  const sut = new SessionResolveGate(loader, { ...defaultOptions, ...options }, metrics);
  return { sut, loader };
}

const idle = { activeLoads: 0, waitingLoads: 0, inFlight: 0 };

describe(SessionResolveGate.name, () => {
  describe('single flight', () => {
    it('loads a cold session once for concurrent callers and hands them all the same object', async () => {
      const { sut, loader } = createGate();
      loader.hold('same-session');

      const callers = Array.from({ length: 4 }, () => sut.resolveFull('same-session'));
      await loader.untilStarted(1);
      expect(sut.status().inFlight).toBe(1);
      loader.release('same-session');
      const results = await Promise.all(callers);

      expect(loader.fullCalls).toEqual(['same-session']);
      expect(loader.peak).toBe(1);
      expect(results[0]?.session.id).toBe('same-session');
      for (const result of results) expect(result).toBe(results[0]);
      expect(sut.status()).toMatchObject(idle);
    });

    it('reloads a stale cached session once and gives every caller the new copy', async () => {
      const { sut, loader } = createGate();
      const stale = await sut.resolveFull('stale-session');
      loader.revisions.set('stale-session', 2);
      loader.hold('stale-session');

      const callers = Array.from({ length: 4 }, () => sut.resolveFull('stale-session'));
      await loader.untilStarted(2);
      loader.release('stale-session');
      const results = await Promise.all(callers);

      expect(loader.fullCalls).toEqual(['stale-session', 'stale-session']);
      expect(loader.peak).toBe(1);
      expect(results[0]).not.toBe(stale);
      expect(results[0]?.session.revision).toBe(2);
      for (const result of results) expect(result).toBe(results[0]);
    });

    it('reloads again when the joined load is older than the revision a caller saw', async () => {
      const { sut, loader } = createGate();
      await sut.resolveFull('moving');
      loader.revisions.set('moving', 2);
      // A write lands between the two callers' metadata reads
      loader.upcomingMetadataRevisions.push(2, 3);
      loader.hold('moving');

      const earlier = sut.resolveFull('moving');
      const later = sut.resolveFull('moving');
      await loader.untilStarted(2);
      loader.revisions.set('moving', 3);
      loader.release('moving');

      expect((await earlier)?.session.revision).toBe(2);
      expect((await later)?.session.revision).toBe(3);
      expect(loader.fullCalls).toEqual(['moving', 'moving', 'moving']);
    });

    it('gives every waiting caller the leader error, keeps nothing, and retries afresh', async () => {
      const { sut, loader } = createGate({ concurrency: 1 });
      const failure = new Error('disk on fire');
      loader.failures.set('flaky', failure);
      loader.hold('flaky');

      const callers = Array.from({ length: 3 }, () => sut.resolveFull('flaky'));
      await loader.untilStarted(1);
      loader.release('flaky');
      for (const caller of callers) await expect(caller).rejects.toBe(failure);

      expect(sut.status()).toMatchObject({ ...idle, cacheSize: 0 });
      const retried = await sut.resolveFull('flaky');
      expect(retried?.session.id).toBe('flaky');
      expect(loader.fullCalls).toEqual(['flaky', 'flaky']);
    });

    it('lets an aborted follower stop waiting without disturbing the others', async () => {
      const { sut, loader } = createGate();
      loader.hold('shared');
      const leader = sut.resolveFull('shared');
      await loader.untilStarted(1);
      const controller = new AbortController();
      const quitter = sut.resolveFull('shared', controller.signal);
      const stayer = sut.resolveFull('shared');

      const reason = new Error('client went away');
      controller.abort(reason);
      await expect(quitter).rejects.toBe(reason);

      expect(sut.status()).toMatchObject({ activeLoads: 1, inFlight: 1 });
      loader.release('shared');
      const [leaderResult, stayerResult] = await Promise.all([leader, stayer]);
      expect(leaderResult?.session.id).toBe('shared');
      expect(stayerResult).toBe(leaderResult);
      expect(loader.fullCalls).toEqual(['shared']);
      expect(sut.status()).toMatchObject(idle);
    });

    it('rejects a caller whose signal is already aborted before doing any work', async () => {
      const { sut, loader } = createGate();
      const controller = new AbortController();
      controller.abort();

      await expect(sut.resolveFull('never', controller.signal)).rejects.toMatchObject({
        name: 'AbortError',
      });
      expect(loader.fullCalls).toEqual([]);
    });

    it('refuses an aborted caller before revalidating a cached copy', async () => {
      const { sut, loader } = createGate();
      await sut.resolveFull('cached');
      const controller = new AbortController();
      controller.abort();

      await expect(sut.resolveFull('cached', controller.signal)).rejects.toMatchObject({
        name: 'AbortError',
      });
      expect(loader.metadataCalls).toEqual([]);
      expect(loader.fullCalls).toEqual(['cached']);
    });
  });

  describe('concurrency bound', () => {
    it('runs at most two distinct cold loads at once with concurrency 2', async () => {
      const { sut, loader } = createGate({ concurrency: 2 });
      loader.holdEverything = true;
      const ids = ['session-a', 'session-b', 'session-c', 'session-d'];

      const callers = ids.map((id) => sut.resolveFull(id));
      await loader.untilStarted(2);
      expect(sut.status()).toMatchObject({ activeLoads: 2, waitingLoads: 2, inFlight: 4 });
      loader.releaseAll();
      const results = await Promise.all(callers);

      expect(loader.peak).toBe(2);
      expect(results.map((result) => result?.session.id)).toEqual(ids);
      expect(sut.status()).toMatchObject(idle);
    });

    it('honours the concurrency setting: 3 of 6 distinct sessions load at once', async () => {
      const { sut, loader } = createGate({ concurrency: 3 });
      loader.holdEverything = true;
      const ids = ['one', 'two', 'three', 'four', 'five', 'six'];

      const callers = ids.map((id) => sut.resolveFull(id));
      await loader.untilStarted(3);
      expect(sut.status()).toMatchObject({ activeLoads: 3, waitingLoads: 3, concurrency: 3 });
      loader.releaseAll();
      const results = await Promise.all(callers);

      expect(loader.peak).toBe(3);
      expect(results.map((result) => result?.session.id)).toEqual(ids);
    });

    it('times out waiting for a slot, leaks nothing, and serves the session later', async () => {
      const { sut, loader } = createGate({ concurrency: 1, timeoutMs: 50 });
      loader.hold('blocker');
      const blocker = sut.resolveFull('blocker');
      await loader.untilStarted(1);

      const late = sut.resolveFull('late');
      await expect(late).rejects.toBeInstanceOf(ScribeException);
      await expect(late).rejects.toMatchObject({
        code: ScribeErrorCode.SessionResolveTimeout,
        message: 'No session load slot freed up within 50 ms (session late)',
      });
      expect(sut.status()).toMatchObject({ activeLoads: 1, waitingLoads: 0, inFlight: 1 });
      expect(loader.fullCalls).toEqual(['blocker']);

      loader.release('blocker');
      expect((await blocker)?.session.id).toBe('blocker');
      expect((await sut.resolveFull('late'))?.session.id).toBe('late');
      expect(sut.status()).toMatchObject(idle);
    });

    it('bounds a follower wait on a hung leader by the timeout', async () => {
      const { sut, loader } = createGate({ timeoutMs: 50 });
      loader.hold('hung');
      const leader = sut.resolveFull('hung');
      await loader.untilStarted(1);

      await expect(sut.resolveFull('hung')).rejects.toMatchObject({
        code: ScribeErrorCode.SessionResolveTimeout,
        message: 'Session hung did not finish loading within 50 ms',
      });
      loader.release('hung');
      expect((await leader)?.session.id).toBe('hung');
      expect(loader.fullCalls).toEqual(['hung']);
    });
  });

  describe('bypass', () => {
    it('answers a metadata read while both slots are held by blocked full loads', async () => {
      const { sut, loader } = createGate({ concurrency: 2 });
      loader.hold('busy-a', 'busy-b');
      const busy = [sut.resolveFull('busy-a'), sut.resolveFull('busy-b')];
      await loader.untilStarted(2);

      await expect(sut.resolveMetadata('quick')).resolves.toEqual(sessionRecord('quick', 1));
      expect(sut.status()).toMatchObject({ activeLoads: 2 });

      loader.release('busy-a', 'busy-b');
      const results = await Promise.all(busy);
      expect(results.map((result) => result?.session.id)).toEqual(['busy-a', 'busy-b']);
    });

    it('answers a fresh cache hit with the cached object while both slots are held', async () => {
      const { sut, loader } = createGate({ concurrency: 2 });
      const cached = await sut.resolveFull('cached');
      loader.hold('busy-a', 'busy-b');
      const busy = [sut.resolveFull('busy-a'), sut.resolveFull('busy-b')];
      await loader.untilStarted(3);

      await expect(sut.resolveFull('cached')).resolves.toBe(cached);
      expect(loader.metadataCalls).toEqual(['cached']);
      expect(sut.status()).toMatchObject({ activeLoads: 2 });
      expect(loader.fullCalls).toEqual(['cached', 'busy-a', 'busy-b']);

      loader.release('busy-a', 'busy-b');
      await Promise.all(busy);
    });
  });

  describe('cache', () => {
    it('evicts and returns null when the database no longer knows a cached session', async () => {
      const { sut, loader } = createGate();
      await sut.resolveFull('gone');
      loader.missing.add('gone');

      await expect(sut.resolveFull('gone')).resolves.toBeNull();
      expect(sut.status().cacheSize).toBe(0);
    });

    it('never caches a null load', async () => {
      const { sut, loader } = createGate();
      loader.missing.add('ghost');

      await expect(sut.resolveFull('ghost')).resolves.toBeNull();
      await expect(sut.resolveFull('ghost')).resolves.toBeNull();
      expect(loader.fullCalls).toEqual(['ghost', 'ghost']);
      expect(sut.status().cacheSize).toBe(0);
    });

    it('with cacheSize 0 never caches but still loads concurrent callers once', async () => {
      const { sut, loader } = createGate({ cacheSize: 0 });
      loader.hold('uncached');
      const callers = Array.from({ length: 3 }, () => sut.resolveFull('uncached'));
      await loader.untilStarted(1);
      loader.release('uncached');
      const results = await Promise.all(callers);

      for (const result of results) expect(result).toBe(results[0]);
      expect(loader.fullCalls).toEqual(['uncached']);
      await sut.resolveFull('uncached');
      expect(loader.fullCalls).toEqual(['uncached', 'uncached']);
      expect(sut.status()).toMatchObject({ cacheSize: 0, cacheCapacity: 0 });
    });

    it('counts full loads, hits, misses and stale reloads', async () => {
      const metrics = new CountingMetrics();
      const { sut, loader } = createGate({}, metrics);
      loader.hold('counted');

      const cold = [sut.resolveFull('counted'), sut.resolveFull('counted')];
      await loader.untilStarted(1);
      loader.release('counted');
      await Promise.all(cold);
      await sut.resolveFull('counted');
      loader.revisions.set('counted', 2);
      await sut.resolveFull('counted');
      await sut.resolveFull('counted');

      expect(metrics).toMatchObject({
        fullLoads: 2,
        cacheMisses: 2,
        cacheHits: 2,
        staleReloads: 1,
      });
    });
  });

  describe('nested resolution', () => {
    it('resolves the same and another session from inside a load without deadlocking', async () => {
      // A short timeout turns a self-deadlock into a quick failure instead of a hang
      const { sut, loader } = createGate({ concurrency: 1, timeoutMs: 1_000 });
      const nested: (FullSession | null)[] = [];
      let outerLoads = 0;
      loader.duringLoad = async (sessionId) => {
        if (sessionId !== 'outer' || outerLoads++ > 0) return;
        nested.push(await sut.resolveFull('outer'), await sut.resolveFull('inner'));
      };

      const outer = await sut.resolveFull('outer');

      expect(outer?.session.id).toBe('outer');
      expect(nested.map((result) => result?.session.id)).toEqual(['outer', 'inner']);
      expect(loader.fullCalls).toEqual(['outer', 'outer', 'inner']);
      expect(sut.status()).toMatchObject(idle);
    });
    it('loads afresh from inside its own load even while a cached copy exists', async () => {
      const metrics = new CountingMetrics();
      const { sut, loader } = createGate({ concurrency: 1, timeoutMs: 1_000 }, metrics);
      await sut.resolveFull('own');
      loader.revisions.set('own', 2);
      const nested: (FullSession | null)[] = [];
      loader.duringLoad = async () => {
        // Only the reload (the second load) calls back into the gate
        if (loader.fullCalls.length === 2 && nested.length === 0) {
          nested.push(await sut.resolveFull('own'));
        }
      };

      const reloaded = await sut.resolveFull('own');

      expect(reloaded?.session.revision).toBe(2);
      expect(nested.map((result) => result?.session.revision)).toEqual([2]);
      expect(loader.fullCalls).toEqual(['own', 'own', 'own']);
      // Only the outer caller revalidated the cached copy
      expect(loader.metadataCalls).toEqual(['own']);
      expect(metrics).toMatchObject({ cacheHits: 0, cacheMisses: 1, staleReloads: 1 });
    });

    it('does not join a load of another session that is queued for the slot it holds', async () => {
      const { sut, loader } = createGate({ concurrency: 1, timeoutMs: 1_000 });
      loader.hold('outer');
      const outer = sut.resolveFull('outer');
      await loader.untilStarted(1);
      const queued = sut.resolveFull('inner');
      expect(sut.status()).toMatchObject({ activeLoads: 1, waitingLoads: 1, inFlight: 2 });
      const nested: (FullSession | null)[] = [];
      loader.duringLoad = async (sessionId) => {
        if (sessionId === 'outer') nested.push(await sut.resolveFull('inner'));
      };

      loader.release('outer');

      const [outerResult, queuedResult] = await Promise.all([outer, queued]);
      expect(outerResult?.session.id).toBe('outer');
      expect(nested.map((result) => result?.session.id)).toEqual(['inner']);
      expect(queuedResult?.session.id).toBe('inner');
      expect(loader.fullCalls).toEqual(['outer', 'inner', 'inner']);
      expect(sut.status()).toMatchObject(idle);
    });
  });

  describe('write-through', () => {
    it('appends stored messages to a cached entry so a later hit needs no reload', async () => {
      const { sut, loader } = createGate();
      const cached = await sut.resolveFull('written');
      const stored = message('written', 1);

      sut.applyStored('written', [stored], 2, 2);
      loader.revisions.set('written', 2);
      const afterWrite = await sut.resolveFull('written');

      expect(afterWrite).toBe(cached);
      expect(afterWrite?.session.revision).toBe(2);
      expect(afterWrite?.messages.map((record) => record.id)).toEqual([
        'written-message-0',
        'written-message-1',
      ]);
      expect(loader.fullCalls).toEqual(['written']);
    });

    it('caches nothing for a session that was not cached', async () => {
      const { sut, loader } = createGate();

      sut.applyStored('cold', [message('cold', 1)], 2, 2);

      expect(sut.status().cacheSize).toBe(0);
      await sut.resolveFull('cold');
      expect(loader.fullCalls).toEqual(['cold']);
    });

    it('puts a replayed older message in its accepted place', async () => {
      const { sut, loader } = createGate();
      loader.revisions.set('replayed', 3);
      const cached = await sut.resolveFull('replayed');
      const late = { ...message('replayed', 1), id: 'late', orderKey: '00000001.5' };

      sut.applyStored('replayed', [late], 4, 9);

      expect(cached?.messages.map((record) => record.id)).toEqual([
        'replayed-message-0',
        'replayed-message-1',
        'late',
        'replayed-message-2',
      ]);
      expect(cached?.session).toMatchObject({ revision: 4, messageCount: 4, updatedAt: 9 });
    });

    it('puts a replayed message older than every cached one first', async () => {
      const { sut, loader } = createGate();
      loader.revisions.set('replayed', 2);
      const cached = await sut.resolveFull('replayed');
      const earliest = { ...message('replayed', 0), id: 'earliest', orderKey: '0' };

      sut.applyStored('replayed', [earliest], 3, 9);

      expect(cached?.messages.map((record) => record.id)).toEqual([
        'earliest',
        'replayed-message-0',
        'replayed-message-1',
      ]);
    });

    it('reloads when another instance wrote besides this one', async () => {
      const { sut, loader } = createGate();
      await sut.resolveFull('shared');

      sut.applyStored('shared', [message('shared', 1)], 2, 2);
      // This instance stored one message, another instance one more.
      loader.revisions.set('shared', 3);
      const reloaded = await sut.resolveFull('shared');

      expect(reloaded?.messages).toHaveLength(3);
      expect(loader.fullCalls).toEqual(['shared', 'shared']);
    });

    it('drops a cached copy that had already seen the write (read before it committed)', async () => {
      const { sut, loader } = createGate();
      // The load read revision 2, message 1 included, while that write was still uncommitted.
      loader.revisions.set('early', 2);
      const cached = await sut.resolveFull('early');

      sut.applyStored('early', [message('early', 1)], 2, 2);

      expect(cached?.messages).toHaveLength(2);
      expect(sut.status().cacheSize).toBe(0);
    });

    it('keeps one load for everyone when a write lands while that load waits for a slot', async () => {
      const { sut, loader } = createGate();
      loader.hold('busy-1');
      loader.hold('busy-2');
      const busy = [sut.resolveFull('busy-1'), sut.resolveFull('busy-2')];
      await loader.untilStarted(2);
      const first = sut.resolveFull('streamed');

      sut.applyStored('streamed', [message('streamed', 1)], 2, 2);
      loader.revisions.set('streamed', 2);
      const second = sut.resolveFull('streamed');
      loader.release('busy-1');
      loader.release('busy-2');
      await Promise.all(busy);

      const [a, b] = await Promise.all([first, second]);
      expect(a).toBe(b);
      expect(a?.session.revision).toBe(2);
      expect(loader.fullCalls.filter((id) => id === 'streamed')).toHaveLength(1);
    });

    it('does not cache a load that started before a write', async () => {
      const { sut, loader } = createGate();
      loader.hold('racing');
      const beforeWrite = sut.resolveFull('racing');
      await loader.untilStarted(1);

      sut.applyStored('racing', [message('racing', 1)], 2, 2);
      loader.release('racing');

      expect((await beforeWrite)?.session.revision).toBe(1);
      expect(sut.status().cacheSize).toBe(0);
    });

    it('starts a fresh load for readers after a write instead of joining the older one', async () => {
      const { sut, loader } = createGate();
      loader.hold('racing');
      const beforeWrite = sut.resolveFull('racing');
      await loader.untilStarted(1);

      sut.applyStored('racing', [message('racing', 1)], 2, 2);
      loader.revisions.set('racing', 2);
      const afterWrite = sut.resolveFull('racing');
      await loader.untilStarted(2);
      loader.releaseOldest('racing');
      expect((await beforeWrite)?.session.revision).toBe(1);

      // The older load finishing must not unregister the newer one
      expect(sut.status().inFlight).toBe(1);
      const joiner = sut.resolveFull('racing');
      loader.release('racing');
      const fresh = await afterWrite;
      expect(fresh?.session.revision).toBe(2);
      await expect(joiner).resolves.toBe(fresh);
      await expect(sut.resolveFull('racing')).resolves.toBe(fresh);
      expect(loader.fullCalls).toEqual(['racing', 'racing']);
    });
  });
  describe('byte bounds', () => {
    // message(id, i) records are about 300 bytes each (recordBytes).
    const bytesOf = (messages: number) =>
      Array.from({ length: messages }, (_, index) => recordBytes(message('x', index))).reduce(
        (sum, bytes) => sum + bytes,
        0,
      );

    it('answers a load that stopped short but never caches it', async () => {
      const { sut, loader } = createGate();
      loader.oversized.add('huge');

      const first = await sut.resolveFull('huge');
      expect(first).toMatchObject({ complete: false, messages: [] });
      await sut.resolveFull('huge');

      expect(loader.fullCalls).toEqual(['huge', 'huge']);
      expect(sut.status().cacheSize).toBe(0);
    });

    it('keeps the cached transcripts within cacheMaxBytes, dropping the least recently used', async () => {
      const { sut, loader } = createGate({ cacheMaxBytes: bytesOf(5) + 100 });
      loader.revisions.set('a', 3);
      loader.revisions.set('b', 3);

      await sut.resolveFull('a');
      await sut.resolveFull('b');

      // 3 + 3 messages do not fit in the bytes of 5: only the newer stays.
      expect(sut.status().cacheSize).toBe(1);
      await sut.resolveFull('b');
      expect(loader.fullCalls).toEqual(['a', 'b']);
      await sut.resolveFull('a');
      expect(loader.fullCalls).toEqual(['a', 'b', 'a']);
    });

    it('drops a cached copy that a write grows past the byte bound', async () => {
      const { sut, loader } = createGate({ cacheMaxBytes: bytesOf(3) + 10 });
      loader.revisions.set('s', 3);
      await sut.resolveFull('s');
      expect(sut.status().cacheSize).toBe(1);

      sut.applyStored('s', [message('s', 3)], 4, 99);

      expect(sut.status().cacheSize).toBe(0);
    });

    it('refuses a byte bound that is not positive', () => {
      expect(() => createGate({ cacheMaxBytes: 0 })).toThrow(
        new RangeError('cacheMaxBytes must be positive, got 0'),
      );
    });

    it.each([-1, 1.5, Number.NaN])('refuses a cacheSize of %p', (cacheSize) => {
      expect(() => createGate({ cacheSize })).toThrow(
        new RangeError(`cacheSize must be a non-negative integer, got ${cacheSize}`),
      );
    });
  });
});
