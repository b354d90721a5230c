import { type Provider } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SessionLoader } from './session-loader.js';
import { SessionResolveGate, type SessionResolveGateMetrics } from './session-resolve-gate.js';
import { StoredSessionLoader } from './stored-session-loader.js';

/** The gate's counters, kept in the instance's metrics. */
class SessionGateMetrics implements SessionResolveGateMetrics {
  constructor(private readonly metrics: MetricsService) {}

  fullLoad(): void {
    this.metrics.sessionFullLoads.inc();
  }

  cacheHit(): void {
    this.metrics.sessionCacheHits.inc();
  }

  cacheMiss(): void {
    this.metrics.sessionCacheMisses.inc();
  }

  staleReload(): void {
    this.metrics.sessionStaleReloads.inc();
  }
}

/**
 * The gate full session loads go through, over `loader`, sized from ScribeConfig, counting
 * into the metrics.
 */
export function sessionResolveGate(
  loader: SessionLoader,
  config: ScribeConfig,
  metrics: MetricsService,
): SessionResolveGate {
  const gate = new SessionResolveGate(
    loader,
    {
      concurrency: config.sessionResolveConcurrency,
      timeoutMs: config.sessionResolveTimeoutMs,
      cacheSize: config.sessionCacheSize,
      cacheMaxBytes: config.sessionCacheMaxBytes,
    },
    new SessionGateMetrics(metrics),
  );
  metrics.observeGauge('scribe_session_resolve_active', () => gate.status().activeLoads);
  metrics.observeGauge('scribe_session_resolve_waiting', () => gate.status().waitingLoads);
  return gate;
}

/** The read side's collaborators Nest cannot build from a class alone. */
export const sessionProviders: Provider[] = [
  // The gate's one loader, by its token: what a test or a host overrides.
  { provide: SessionLoader, useClass: StoredSessionLoader },
  {
    provide: SessionResolveGate,
    inject: [SessionLoader, ScribeConfig, MetricsService],
    useFactory: sessionResolveGate,
  },
];
