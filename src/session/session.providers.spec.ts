import { Test } from '@nestjs/testing';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { SessionQueries } from '../database/session-queries.js';
import { type FullSession, type SessionRecord } from '../message/session-record.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SessionLoader } from './session-loader.js';
import { SessionResolveGate } from './session-resolve-gate.js';
import { sessionProviders } from './session.providers.js';
import { StoredSessionLoader } from './stored-session-loader.js';

const record = (id: string, revision: number): SessionRecord => ({
  id,
  title: null,
  metadata: null,
  createdAt: 0,
  updatedAt: 0,
  messageCount: 0,
  revision,
});
const full = (id: string, revision: number): FullSession => ({
  session: record(id, revision),
  messages: [],
  bytes: 0,
  complete: true,
});

/** Queries that answer from `sessions`, recording the byte bound each full load was given. */
class FakeQueries {
  readonly sessions = new Map<string, number>();
  readonly fullLoadBounds: number[] = [];
  failure: Error | null = null;

  loadFull(id: string, maxBytes: number): Promise<FullSession | null> {
    this.fullLoadBounds.push(maxBytes);
    if (this.failure) return Promise.reject(this.failure);
    const revision = this.sessions.get(id);
    return Promise.resolve(revision === undefined ? null : full(id, revision));
  }

  findMetadata(id: string): Promise<SessionRecord | null> {
    if (this.failure) return Promise.reject(this.failure);
    const revision = this.sessions.get(id);
    return Promise.resolve(revision === undefined ? null : record(id, revision));
  }
}

const counted = async (metric: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await metric.get()).values[0]?.value ?? 0;

async function durationCount(metrics: MetricsService): Promise<number> {
  const { values } = await metrics.fullLoadDuration.get();
  return values.find((value) => value.metricName?.endsWith('_count'))?.value ?? 0;
}

async function compile(override?: SessionLoader) {
  const queries = new FakeQueries();
  const metrics = new MetricsService();
  const builder = Test.createTestingModule({
    providers: [
      ...sessionProviders,
      { provide: SessionQueries, useValue: queries },
      {
        provide: ScribeConfig,
        useValue: ScribeConfig.fromVariables({
          SESSION_CACHE_SIZE: '4',
          SESSION_CACHE_MAX_BYTES: '2000000',
        }),
      },
      { provide: MetricsService, useValue: metrics },
    ],
  });
  if (override) builder.overrideProvider(SessionLoader).useValue(override);
  const module = await builder.compile();
  return {
    sut: module.get(SessionResolveGate),
    loader: module.get(SessionLoader),
    queries,
    metrics,
  };
}

describe('sessionProviders', () => {
  it('builds the gate over the stored sessions, one load bounded by SESSION_CACHE_MAX_BYTES', async () => {
    const { sut, loader, queries } = await compile();
    queries.sessions.set('a', 3);

    expect(loader).toBeInstanceOf(StoredSessionLoader);
    await expect(sut.resolveFull('a')).resolves.toEqual(full('a', 3));
    await expect(sut.resolveFull('a')).resolves.toEqual(full('a', 3));
    await expect(sut.resolveMetadata('a')).resolves.toEqual(record('a', 3));
    await expect(sut.resolveFull('unknown')).resolves.toBeNull();
    expect(queries.fullLoadBounds).toEqual([2_000_000, 2_000_000]);
  });

  it('times each full load, a failed one too, and counts the gate into the metrics', async () => {
    const { sut, queries, metrics } = await compile();
    queries.sessions.set('a', 1);
    await sut.resolveFull('a');
    queries.sessions.set('a', 2);
    await sut.resolveFull('a');
    await sut.resolveFull('a');
    queries.failure = new Error('a fault of the query');
    sut.evict('a');
    await expect(sut.resolveFull('a')).rejects.toThrow();

    expect(await durationCount(metrics)).toBe(3);
    expect(await counted(metrics.sessionFullLoads)).toBe(3);
    expect(await counted(metrics.sessionCacheMisses)).toBe(2);
    expect(await counted(metrics.sessionCacheHits)).toBe(1);
    expect(await counted(metrics.sessionStaleReloads)).toBe(1);
  });

  it('tells an outage of the database apart, for full and metadata loads alike', async () => {
    const { sut, queries } = await compile();
    queries.failure = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
    });
    const unavailable = expect.objectContaining({ code: ScribeErrorCode.DatabaseUnavailable });

    await expect(sut.resolveFull('a')).rejects.toEqual(unavailable);
    await expect(sut.resolveMetadata('a')).rejects.toEqual(unavailable);
  });

  it('hands the gate whatever loader its token is given, as a test or a host overrides it', async () => {
    const loads: string[] = [];
    const override: SessionLoader = {
      loadFull: (id) => {
        loads.push(id);
        return Promise.resolve(full(id, 7));
      },
      loadMetadata: (id) => Promise.resolve(record(id, 7)),
    };
    const { sut, queries } = await compile(override);

    await expect(sut.resolveFull('b')).resolves.toEqual(full('b', 7));
    expect(loads).toEqual(['b']);
    expect(queries.fullLoadBounds).toEqual([]);
  });
});
