import { type Provider } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { fromDatabase } from '../database/database-errors.js';
import { SessionQueries } from '../database/session-queries.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SessionResolveGate } from './session-resolve-gate.js';

/**
 * The gate full session loads go through, over the database's queries, sized from
 * ScribeConfig, counting into the metrics. An outage of the database is told apart from a
 * fault here (fromDatabase), for every load.
 */
export function sessionResolveGate(
  queries: SessionQueries,
  config: ScribeConfig,
  metrics: MetricsService,
): SessionResolveGate {
  const gate = new SessionResolveGate(
    {
      // A transcript too large to cache is not loaded whole: it is read page by page.
      loadFull: async (id) => {
        const timer = metrics.fullLoadDuration.startTimer();
        try {
          return await fromDatabase(queries.loadFull(id, config.sessionCacheMaxBytes));
        } finally {
          timer();
        }
      },
      loadMetadata: (id) => fromDatabase(queries.findMetadata(id)),
    },
    {
      concurrency: config.sessionResolveConcurrency,
      timeoutMs: config.sessionResolveTimeoutMs,
      cacheSize: config.sessionCacheSize,
      cacheMaxBytes: config.sessionCacheMaxBytes,
    },
    {
      fullLoad: () => metrics.sessionFullLoads.inc(),
      cacheHit: () => metrics.sessionCacheHits.inc(),
      cacheMiss: () => metrics.sessionCacheMisses.inc(),
      staleReload: () => metrics.sessionStaleReloads.inc(),
    },
  );
  metrics.observeGauge('scribe_session_resolve_active', () => gate.status().activeLoads);
  metrics.observeGauge('scribe_session_resolve_waiting', () => gate.status().waitingLoads);
  return gate;
}

/** The read side's collaborators Nest cannot build from a class alone. */
export const sessionProviders: Provider[] = [
  {
    provide: SessionResolveGate,
    inject: [SessionQueries, ScribeConfig, MetricsService],
    useFactory: sessionResolveGate,
  },
];
