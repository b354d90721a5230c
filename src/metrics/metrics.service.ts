import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Scribe's Prometheus metrics, on a registry of its own (not prom-client's global one) so
 * that several application instances in one process, as in tests, never collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  // Values read at scrape time from the services that own them.
  private readonly gaugeSources = new Map<string, () => number | Promise<number>>();

  readonly appendsTotal = new Counter({
    name: 'scribe_appends_total',
    help: 'Messages accepted by append mutations, by what happened to them.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly pendingMessages = this.sourcedGauge(
    'scribe_pending_messages',
    'Accepted messages held in memory until the database takes them.',
  );

  readonly dbWriteFailures = new Counter({
    name: 'scribe_db_write_failures_total',
    help: 'Database writes of messages that failed.',
    registers: [this.registry],
  });

  readonly messagesDropped = new Counter({
    name: 'scribe_messages_dropped_total',
    help: 'Messages evicted past the pending cap that could not be spooled to disk: lost.',
    registers: [this.registry],
  });

  readonly spoolFiles = this.sourcedGauge(
    'scribe_spool_files',
    'Message files waiting in the on-disk spool.',
  );

  readonly spoolWrites = new Counter({
    name: 'scribe_spool_writes_total',
    help: 'Messages written to the on-disk spool, by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly spoolReplays = new Counter({
    name: 'scribe_spool_replays_total',
    help: 'Spooled messages stored in the database and removed from the spool.',
    registers: [this.registry],
  });

  readonly spoolBadFiles = new Counter({
    name: 'scribe_spool_bad_files_total',
    help: 'Spool files that could not be parsed and were set aside as *.bad.',
    registers: [this.registry],
  });

  readonly sessionFullLoads = new Counter({
    name: 'scribe_session_full_loads_total',
    help: 'Full loads (metadata and whole transcript) of a session from the database.',
    registers: [this.registry],
  });

  readonly sessionResolveActive = this.sourcedGauge(
    'scribe_session_resolve_active',
    'Full session loads running now.',
  );

  readonly sessionResolveWaiting = this.sourcedGauge(
    'scribe_session_resolve_waiting',
    'Full session loads waiting for a slot.',
  );

  readonly sessionCacheHits = new Counter({
    name: 'scribe_session_cache_hits_total',
    help: 'Full session reads served from the cache after revalidation.',
    registers: [this.registry],
  });

  readonly sessionCacheMisses = new Counter({
    name: 'scribe_session_cache_misses_total',
    help: 'Full session reads that found no cached copy.',
    registers: [this.registry],
  });

  readonly sessionStaleReloads = new Counter({
    name: 'scribe_session_stale_reloads_total',
    help: 'Cached sessions reloaded because the database had newer messages.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Makes the gauge `name` read its value from `source` at every scrape. */
  observeGauge(name: string, source: () => number | Promise<number>): void {
    this.gaugeSources.set(name, source);
  }

  private sourcedGauge(name: string, help: string): Gauge {
    const sources = this.gaugeSources;
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const source = sources.get(name);
        if (source) this.set(await source());
      },
    });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
